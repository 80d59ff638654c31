#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "histogram/latency_histogram.h"

extern "C" {
uint32_t fl_bucket_of_from_c(uint64_t value);
uint64_t fl_bucket_low_from_c(uint32_t bucket);
}

namespace funclatency {
namespace {

// libbpf-tools' slot: row 0 holds 0 and 1, row r holds [2^r, 2^(r+1)).
uint32_t reference_row(uint64_t v) {
  uint32_t r = 0;
  while (v > 1) {
    v >>= 1;
    r++;
  }
  return r;
}

TEST(BucketMath, CAndCppAgreeOnEveryOctaveEdge) {
  for (uint32_t octave = 0; octave < 64; octave++) {
    uint64_t edge = uint64_t{1} << octave;
    for (uint64_t v : {edge - 1, edge, edge + 1}) {
      EXPECT_EQ(fl_bucket_of(v), fl_bucket_of_from_c(v)) << v;
    }
  }
  for (uint32_t b = 0; b < FL_NUM_BUCKETS; b++)
    EXPECT_EQ(fl_bucket_low(b), fl_bucket_low_from_c(b));
}

TEST(BucketMath, BucketsAreContiguousAndRowsMatchLibbpfTools) {
  uint32_t previous = 0;
  for (uint64_t v = 0; v < (1u << 20); v++) {
    uint32_t b = fl_bucket_of(v);
    ASSERT_TRUE(b == previous || b == previous + 1) << v;
    ASSERT_LE(fl_bucket_low(b), v);
    ASSERT_EQ(fl_row_of_bucket(b), reference_row(v)) << v;
    previous = b;
  }
  for (uint32_t octave = 20; octave < FL_MAX_OCTAVE_EXCL; octave++) {
    uint64_t edge = uint64_t{1} << octave;
    EXPECT_EQ(fl_row_of_bucket(fl_bucket_of(edge)), octave);
    EXPECT_EQ(fl_row_of_bucket(fl_bucket_of(edge - 1)), octave - 1);
  }
  EXPECT_EQ(fl_bucket_of(UINT64_MAX), FL_NUM_BUCKETS - 1);
}

TEST(BucketMath, BucketWidthIsAtMostASixteenthOfItsLowerBound) {
  for (uint32_t b = FL_EXACT_LIMIT; b + 1 < FL_NUM_BUCKETS; b++) {
    uint64_t low = fl_bucket_low(b), next = fl_bucket_low(b + 1);
    EXPECT_LE((next - low) * 16, low) << b;
  }
}

TEST(LatencyHistogram, CountSumMinMaxAreExact) {
  LatencyHistogram h(1000);
  for (uint64_t ns : {1500u, 999u, 250000u, 7000000u}) h.record(ns);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.sum_ns(), 1500u + 999u + 250000u + 7000000u);
  EXPECT_EQ(h.min_ns(), 999u);
  EXPECT_EQ(h.max_ns(), 7000000u);
}

TEST(LatencyHistogram, Log2RowsUseWholeDisplayUnits) {
  LatencyHistogram h(1000);
  h.record(1999);    // 1 us -> row 0
  h.record(2000);    // 2 us -> row 1
  h.record(511999);  // 511 us -> row 8
  h.record(512000);  // 512 us -> row 9
  auto counts = h.log2_counts();
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 1u);
  EXPECT_EQ(counts[8], 1u);
  EXPECT_EQ(counts[9], 1u);
  auto rows = h.log2_rows();
  ASSERT_EQ(rows.size(), 10u);  // rows 0..9, empty ones in between
  EXPECT_EQ(rows[9].low_unit, 512u);
  EXPECT_EQ(rows[9].high_unit, 1023u);
  EXPECT_EQ(rows[0].low_unit, 0u);
  EXPECT_EQ(rows[0].high_unit, 1u);
}

TEST(LatencyHistogram, PercentilesWithinFivePercent) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(std::log(800000.0), 0.8);
  std::vector<uint64_t> values;
  LatencyHistogram h(1000);
  for (int i = 0; i < 200000; i++) {
    auto v = static_cast<uint64_t>(dist(rng)) + 40000;  // >= 40 us: above the exact range
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999}) {
    auto exact = static_cast<double>(values[static_cast<size_t>(std::ceil(q * values.size())) - 1]);
    double estimate = static_cast<double>(h.percentile_ns(q));
    EXPECT_LT(std::abs(estimate - exact) / exact, 0.05) << "q=" << q;
  }
  EXPECT_EQ(h.percentile_ns(1.0), h.max_ns());
  EXPECT_EQ(h.percentile_ns(0.0), h.percentile_ns(1e-9));
}

TEST(LatencyHistogram, KernelCountsAndEventsGiveTheSameHistogram) {
  LatencyHistogram events(1000), kernel(1000);
  std::array<uint64_t, LatencyHistogram::kNumBuckets> buckets{};
  uint64_t sum = 0;
  for (uint64_t ns = 1000; ns < 50000000; ns = ns * 13 / 10) {
    events.record(ns);
    buckets[fl_bucket_of(ns / 1000)]++;
    sum += ns;
  }
  kernel.add_counts(buckets, events.count(), sum, events.min_ns(), events.max_ns());
  EXPECT_TRUE(std::ranges::equal(events.buckets(), kernel.buckets()));
  EXPECT_EQ(events.log2_counts(), kernel.log2_counts());
  EXPECT_EQ(events.percentile_ns(0.95), kernel.percentile_ns(0.95));
  EXPECT_EQ(events.sum_ns(), kernel.sum_ns());
}

TEST(LatencyHistogram, MergeAddsEverything) {
  LatencyHistogram a(1000), b(1000);
  a.record(5000);
  b.record(900000);
  b.record(100);
  a.merge(b);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(a.min_ns(), 100u);
  EXPECT_EQ(a.max_ns(), 900000u);
  LatencyHistogram empty(1000);
  a.merge(empty);
  EXPECT_EQ(a.min_ns(), 100u);
}

TEST(LatencyHistogram, MergeKeepsAMinimumOfZero) {
  // A --cpu-split part is often 0 (a call never runnable); an interval
  // merged into the totals keeps that minimum.
  LatencyHistogram interval(1000), total(1000);
  interval.record(0);
  interval.record(2500);
  total.merge(interval);
  EXPECT_EQ(total.count(), 2u);
  EXPECT_EQ(total.min_ns(), 0u);
}

}  // namespace
}  // namespace funclatency
