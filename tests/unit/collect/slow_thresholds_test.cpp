// Which slow calls are kept: the K slowest of an interval always pass, the
// bound only rises within an interval, and --slower-than pins it.
#include "collect/slow_thresholds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace funclatency {
namespace {

TEST(SlowThresholds, OffWithoutOptions) {
  SlowThresholds thresholds(2, {});
  EXPECT_EQ(thresholds.initial(), UINT64_MAX);
  thresholds.observe(0, 5);
  EXPECT_EQ(thresholds.threshold(0), UINT64_MAX);
}

TEST(SlowThresholds, FollowsTheKthSlowestOfTheInterval) {
  SlowThresholds thresholds(2, {.slowest = 3});
  EXPECT_EQ(thresholds.initial(), 0u);
  thresholds.observe(0, 10);
  thresholds.observe(0, 30);
  EXPECT_EQ(thresholds.threshold(0), 0u);  // fewer than K: everything passes
  thresholds.observe(0, 20);
  EXPECT_EQ(thresholds.threshold(0), 10u);
  thresholds.observe(0, 25);
  thresholds.observe(0, 40);
  EXPECT_EQ(thresholds.threshold(0), 25u);
  EXPECT_EQ(thresholds.threshold(1), 0u);  // functions apart

  // Each interval starts from nothing: it has K slowest calls of its own.
  thresholds.start_interval();
  EXPECT_EQ(thresholds.threshold(0), 0u);
  thresholds.observe(0, 1);
  thresholds.observe(0, 2);
  thresholds.observe(0, 3);
  EXPECT_EQ(thresholds.threshold(0), 1u);
}

// Whatever the order, every call among the K slowest is at or over the
// threshold in force when it ends (so the probe sends it).
TEST(SlowThresholds, TheKSlowestAlwaysPass) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 50; round++) {
    SlowThresholds thresholds(1, {.slowest = 5});
    std::vector<uint64_t> durations(2000);
    for (auto& d : durations) d = random() % 100000;
    std::vector<uint64_t> sent;
    for (uint64_t d : durations) {
      if (d >= thresholds.threshold(0)) {
        sent.push_back(d);
        thresholds.observe(0, d);
      }
    }
    std::sort(durations.rbegin(), durations.rend());
    std::sort(sent.rbegin(), sent.rend());
    ASSERT_GE(sent.size(), 5u);
    for (int i = 0; i < 5; i++) EXPECT_EQ(sent[i], durations[i]);
    EXPECT_LT(sent.size(), 200u);  // about K ln(N/K), not every call
  }
}

TEST(SlowThresholds, SlowerThanPinsTheThreshold) {
  SlowThresholds thresholds(1, {.slowest = 1, .slower_than_ns = 1000});
  EXPECT_EQ(thresholds.initial(), 1000u);
  thresholds.observe(0, 5000);
  thresholds.start_interval();
  EXPECT_EQ(thresholds.threshold(0), 1000u);
}

TEST(SlowThresholds, FunctionsAttachedLater) {
  SlowThresholds thresholds(1, {.slower_than_ns = 7});
  thresholds.add_function(3);
  EXPECT_EQ(thresholds.threshold(3), 7u);
  EXPECT_EQ(thresholds.threshold(9), 7u);
}

// A --config target's own options: its functions keep their own K or
// threshold, the others the run's; the probes' settings convert both ways.
TEST(SlowThresholds, FunctionsWithOptionsOfTheirOwn) {
  SlowThresholds thresholds(2, {.slowest = 1});
  thresholds.set_function(1, {.slowest = 2});
  thresholds.set_function(3, {.slower_than_ns = 50});
  for (uint64_t d : {10, 20, 30}) {
    thresholds.observe(0, d);
    thresholds.observe(1, d);
    thresholds.observe(3, d);
  }
  EXPECT_EQ(thresholds.threshold(0), 30u);  // the run's K = 1
  EXPECT_EQ(thresholds.threshold(1), 20u);  // its own K = 2
  EXPECT_EQ(thresholds.threshold(3), 50u);  // pinned
  EXPECT_EQ(thresholds.options_of(2), (SlowThresholdOptions{.slowest = 1}));

  const SlowThresholdOptions cases[] = {
      {}, {.slowest = 3}, {.slower_than_ns = 1000}, {.slowest = 0, .slower_than_ns = 0}};
  for (const auto& options : cases) {
    EXPECT_EQ(slow_options_of(slow_calls_for(options)), options);
  }
  // --slower-than pins the threshold: no floor in the probes.
  const FunctionSlowCalls both = slow_calls_for({.slowest = 3, .slower_than_ns = 7});
  EXPECT_EQ(both.slow_ns, 7u);
  EXPECT_EQ(both.slowest_k, 0u);
  EXPECT_EQ(slow_calls_for({}).slow_ns, UINT64_MAX);
}

}  // namespace
}  // namespace funclatency
