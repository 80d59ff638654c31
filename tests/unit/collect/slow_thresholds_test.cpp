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

}  // namespace
}  // namespace funclatency
