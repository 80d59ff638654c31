// The fine bucket layout, the histogram built on it, and the bounds its
// header promises (exact count/sum/min/max, percentiles within 1/32), checked
// against the layout written out here rather than against the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "histogram/latency_histogram.h"

extern "C" {
#include "bpf/funclatency.h"

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

// The fine bucket layout as funclatency.h defines it, written out here
// independently of fl_bucket_of and fl_bucket_low: values 0..31 get a bucket
// each; from 32 on, every octave [2^o, 2^(o+1)) is cut into 16 equal parts
// of 2^(o-4), in order, up to octave 47; values from 2^48 on share the last
// bucket. Entry i is the smallest value of bucket i.
std::vector<uint64_t> layout_lower_edges() {
  std::vector<uint64_t> edges;
  for (uint64_t v = 0; v < 32; v++) edges.push_back(v);
  for (uint32_t octave = 5; octave < 48; octave++) {
    for (uint64_t part = 0; part < 16; part++)
      edges.push_back((uint64_t{1} << octave) + part * (uint64_t{1} << (octave - 4)));
  }
  return edges;
}

// The bucket holding `value` in that layout: the last edge at or below it.
uint32_t layout_bucket(const std::vector<uint64_t>& edges, uint64_t value) {
  auto above = std::upper_bound(edges.begin(), edges.end(), value);
  return static_cast<uint32_t>(above - edges.begin() - 1);
}

TEST(BucketMath, LayoutWrittenOutByHand) {
  // A few octaves spelled out, so the reference above is itself checked.
  auto edges = layout_lower_edges();
  ASSERT_EQ(edges.size(), size_t{FL_NUM_BUCKETS});
  EXPECT_EQ(edges[31], 31u);
  // Octave 5 (32..63): width 2.
  EXPECT_EQ(edges[32], 32u);
  EXPECT_EQ(edges[33], 34u);
  EXPECT_EQ(edges[47], 62u);
  // Octave 6 (64..127): width 4.
  EXPECT_EQ(edges[48], 64u);
  EXPECT_EQ(edges[49], 68u);
  EXPECT_EQ(edges[63], 124u);
  // Octave 10 (1024..2047): width 64.
  EXPECT_EQ(edges[112], 1024u);
  EXPECT_EQ(edges[113], 1088u);
  EXPECT_EQ(edges[127], 1984u);
  // Octave 47, the last: width 2^43.
  EXPECT_EQ(edges[704], uint64_t{1} << 47);
  EXPECT_EQ(edges[719], (uint64_t{1} << 47) + 15 * (uint64_t{1} << 43));
}

TEST(BucketMath, BucketOfAndLowFollowTheLayout) {
  auto edges = layout_lower_edges();
  for (uint32_t b = 0; b < FL_NUM_BUCKETS; b++) {
    ASSERT_EQ(fl_bucket_low(b), edges[b]) << "bucket " << b;
    // Each bucket's first and last value, and the value before it.
    uint64_t last = b + 1 < FL_NUM_BUCKETS ? edges[b + 1] - 1 : UINT64_MAX;
    ASSERT_EQ(fl_bucket_of(edges[b]), b) << "value " << edges[b];
    ASSERT_EQ(fl_bucket_of(last), b) << "value " << last;
    if (b > 0) ASSERT_EQ(fl_bucket_of(edges[b] - 1), b - 1) << "value " << edges[b] - 1;
  }
  // Every value of the first octaves, and a spread of larger ones.
  for (uint64_t v = 0; v < 4096; v++) ASSERT_EQ(fl_bucket_of(v), layout_bucket(edges, v)) << v;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; i++) {
    uint64_t v = rng() >> (rng() % 64);
    ASSERT_EQ(fl_bucket_of(v), layout_bucket(edges, v)) << v;
  }
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

// fl_in_units multiplies instead of dividing for usec and msec under 2^32 ns:
// the quotient must be the division's at every multiple of the unit (the
// edges where it steps), next to 2^32, and at random values, for the units
// with a shortcut and for others.
TEST(BucketMath, Log2IsTheHighestSetBit) {
  // fl_log2 has no branches (the verifier's sake); the loop above is the
  // reference: every power of two and its neighbours, then random values.
  for (uint32_t bit = 0; bit < 64; bit++) {
    const uint64_t power = uint64_t{1} << bit;
    for (uint64_t v :
         {power, power - 1, power + 1, power | (power >> 1), ~uint64_t{0} >> (63 - bit)}) {
      if (v == 0) continue;
      ASSERT_EQ(fl_log2(v), reference_row(v)) << "value " << v;
    }
  }
  std::mt19937_64 random(7);
  for (int i = 0; i < 1000000; i++) {
    const uint64_t v = random() >> (random() % 64);
    if (v == 0) continue;
    ASSERT_EQ(fl_log2(v), reference_row(v)) << "value " << v;
  }
}

TEST(BucketMath, InUnitsIsTheDivision) {
  std::mt19937_64 random(28);
  for (uint64_t unit :
       {uint64_t{1}, uint64_t{7}, uint64_t{1000}, uint64_t{1000000}, uint64_t{1000000000}}) {
    for (uint64_t q = 0; q * unit <= 0x1ffffffffull && q < (1u << 22); q++) {
      for (uint64_t v : {q * unit, q * unit + unit - 1}) {
        ASSERT_EQ(fl_in_units(v, unit), v / unit) << v << " / " << unit;
      }
    }
    for (uint64_t v = 0xffffffffull - 5000; v <= 0xffffffffull + 5000; v++) {
      ASSERT_EQ(fl_in_units(v, unit), v / unit) << v << " / " << unit;
    }
    for (int i = 0; i < 1000000; i++) {
      uint64_t v = random() >> (random() % 64);
      ASSERT_EQ(fl_in_units(v, unit), v / unit) << v << " / " << unit;
    }
  }
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

TEST(LatencyHistogram, TheLayoutConstantsAreTheKernels) {
  EXPECT_EQ(LatencyHistogram::kNumBuckets, uint32_t{FL_NUM_BUCKETS});
  EXPECT_EQ(LatencyHistogram::kLog2Rows, uint32_t{FL_LOG2_ROWS});
  auto edges = layout_lower_edges();
  for (uint32_t b = 0; b < LatencyHistogram::kNumBuckets; b++)
    ASSERT_EQ(LatencyHistogram::bucket_low(b), edges[b]) << "bucket " << b;
}

TEST(LatencyHistogram, RowEdgesAreThePowersOfTwo) {
  // Row 0 = [0, 2) units, row r = [2^r, 2^(r+1)); written out, not computed.
  EXPECT_EQ(LatencyHistogram::row_low(0), 0u);
  EXPECT_EQ(LatencyHistogram::row_high(0), 1u);
  EXPECT_EQ(LatencyHistogram::row_end(0), 2u);
  EXPECT_EQ(LatencyHistogram::row_low(1), 2u);
  EXPECT_EQ(LatencyHistogram::row_end(1), 4u);
  EXPECT_EQ(LatencyHistogram::row_low(10), 1024u);
  EXPECT_EQ(LatencyHistogram::row_high(10), 2047u);
  EXPECT_EQ(LatencyHistogram::row_end(47), 281474976710656u);  // 2^48
  for (uint64_t v : {0u, 1u, 2u, 3u, 4u, 1023u, 1024u, 1u << 20, (1u << 20) + 7})
    EXPECT_EQ(LatencyHistogram::row_of(v), reference_row(v)) << v;
  for (uint32_t row = 0; row < LatencyHistogram::kLog2Rows; row++) {
    EXPECT_EQ(LatencyHistogram::row_of(LatencyHistogram::row_low(row)), row);
    EXPECT_EQ(LatencyHistogram::row_of(LatencyHistogram::row_high(row)), row);
  }
}

TEST(LatencyHistogram, MinMaxAreOptional) {
  LatencyHistogram none(1000);
  EXPECT_FALSE(none.known_min_ns());
  EXPECT_FALSE(none.known_max_ns());
  LatencyHistogram recorded(1000);
  recorded.record(3000);
  recorded.record(9000);
  EXPECT_EQ(recorded.known_min_ns(), 3000u);
  EXPECT_EQ(recorded.known_max_ns(), 9000u);
  // A difference of totals: calls, but no minimum or maximum.
  LatencyHistogram difference(1000);
  difference.add_counts(recorded.buckets(), 2, 12000, 0, 0);
  EXPECT_EQ(difference.count(), 2u);
  EXPECT_FALSE(difference.known_min_ns());
  EXPECT_FALSE(difference.known_max_ns());
  // Its percentiles are the buckets' middles, not clamped to unknown bounds.
  EXPECT_GE(difference.percentile_ns(0.5), 3000u);
  EXPECT_LE(difference.percentile_ns(0.5), 9000u);
}

TEST(LatencyHistogram, PowerOfTwoCountsSplitRowZero) {
  LatencyHistogram h(1000);
  h.record(500);         // 0 units: below one
  h.record(1000);        // 1 unit: index 0
  h.record(1999);        // 1 unit: index 0
  h.record(2000);        // 2 units: index 1
  h.record(1048576000);  // 2^20 units: index 20
  auto counts = h.power_of_two_counts();
  EXPECT_EQ(counts.below_one, 1u);
  EXPECT_EQ(counts.by_exponent[0], 2u);
  EXPECT_EQ(counts.by_exponent[1], 1u);
  EXPECT_EQ(counts.by_exponent[20], 1u);
  auto rows = h.log2_counts();
  EXPECT_EQ(rows[0], counts.below_one + counts.by_exponent[0]);
  for (uint32_t r = 1; r < LatencyHistogram::kLog2Rows; r++)
    EXPECT_EQ(rows[r], counts.by_exponent[r]) << r;
}

TEST(LatencyHistogram, PercentilesWithinTheHeadersBound) {
  // latency_histogram.h: relative error <= 1/32 above 32 display units, at
  // most half a unit below.
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
  // Every 0.1% of the calls: a rank near a bucket's edge shows an error of
  // the estimate that ranks in the middle would hide.
  for (int permille = 1; permille < 1000; permille++) {
    double q = permille / 1000.0;
    auto exact = static_cast<double>(values[static_cast<size_t>(std::ceil(q * values.size())) - 1]);
    double estimate = static_cast<double>(h.percentile_ns(q));
    EXPECT_LE(std::abs(estimate - exact), exact / 32)
        << "q=" << permille << "/1000: exact " << exact << " ns, estimate " << estimate << " ns";
  }
  EXPECT_EQ(h.percentile_ns(1.0), h.max_ns());
  EXPECT_EQ(h.percentile_ns(0.0), h.percentile_ns(1e-9));

  // Below 32 units every value has a bucket of its own: half a unit at most.
  LatencyHistogram small(1000);
  std::vector<uint64_t> few;
  for (uint64_t ns = 0; ns < 32000; ns += 617) {
    few.push_back(ns);
    small.record(ns);
  }
  for (size_t rank = 1; rank <= few.size(); rank++) {
    double q = static_cast<double>(rank) / static_cast<double>(few.size());
    auto exact = static_cast<double>(few[rank - 1]);
    double estimate = static_cast<double>(small.percentile_ns(q));
    EXPECT_LE(std::abs(estimate - exact), 500.0)
        << "rank " << rank << ": exact " << exact << " ns, estimate " << estimate << " ns";
  }
}

TEST(LatencyHistogram, KernelCountsAndEventsGiveTheSameHistogram) {
  // The "kernel" side is bucketed by the layout written out above, not by
  // fl_bucket_of, so a wrong fl_bucket_of in record() cannot agree with it.
  auto edges = layout_lower_edges();
  LatencyHistogram events(1000), kernel(1000);
  std::array<uint64_t, LatencyHistogram::kNumBuckets> buckets{};
  uint64_t sum = 0;
  // Up to 2^49 units: through the last octave and past it.
  for (uint64_t ns = 1000; ns < uint64_t{1000} << 49; ns = ns * 13 / 10) {
    events.record(ns);
    buckets[layout_bucket(edges, ns / 1000)]++;
    sum += ns;
  }
  kernel.add_counts(buckets, events.count(), sum, events.min_ns(), events.max_ns());
  for (uint32_t b = 0; b < LatencyHistogram::kNumBuckets; b++)
    EXPECT_EQ(events.buckets()[b], kernel.buckets()[b]) << "bucket " << b << " from " << edges[b];
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

TEST(LatencyHistogram, SinceIsTheCallsAddedToARunningTotal) {
  LatencyHistogram before(1000);
  before.record(5000);
  before.record(900000);
  LatencyHistogram now = before;
  now.record(100);
  now.record(5000);
  auto added = now.since(before);
  ASSERT_TRUE(added);
  EXPECT_EQ(added->count(), 2u);
  EXPECT_EQ(added->sum_ns(), 5100u);
  EXPECT_EQ(added->unit_ns(), 1000u);
  LatencyHistogram expected(1000);
  expected.record(100);
  expected.record(5000);
  for (uint32_t b = 0; b < LatencyHistogram::kNumBuckets; b++) {
    EXPECT_EQ(added->buckets()[b], expected.buckets()[b]) << "bucket " << b;
  }
  // Which calls were the shortest and longest is not in two totals.
  EXPECT_EQ(added->known_min_ns(), std::nullopt);
  EXPECT_EQ(added->known_max_ns(), std::nullopt);
  // Nothing added: an empty difference.
  auto none = now.since(now);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->count(), 0u);
}

// Two reads of a total with its own running min/max (the kernel's): an
// extreme that moved is exact, one that did not is bounded by the buckets.
TEST(LatencyHistogram, SinceWithBoundsKeepsMovedExtremesAndBoundsTheRest) {
  LatencyHistogram before(1000);
  before.record(5000);
  before.record(900000);
  LatencyHistogram now = before;
  now.record(3000);   // a new minimum
  now.record(40000);  // inside the old extremes
  auto added = now.since_with_bounds(before);
  ASSERT_TRUE(added);
  EXPECT_EQ(added->count(), 2u);
  EXPECT_EQ(added->known_min_ns(), 3000u);
  // The maximum did not move: at most the top of 40 us's fine bucket.
  ASSERT_TRUE(added->known_max_ns());
  EXPECT_GE(*added->known_max_ns(), 40000u);
  EXPECT_LT(*added->known_max_ns(), 42000u);

  LatencyHistogram later = now;
  later.record(20000);  // neither extreme moves
  auto inside = later.since_with_bounds(now);
  ASSERT_TRUE(inside);
  ASSERT_TRUE(inside->known_min_ns());
  EXPECT_LE(*inside->known_min_ns(), 20000u);
  EXPECT_GT(*inside->known_min_ns(), 19000u);
  EXPECT_GE(*inside->known_max_ns(), 20000u);
  EXPECT_LT(*inside->known_max_ns(), 21000u);
  EXPECT_FALSE(now.since_with_bounds(later));  // not an earlier value
}

TEST(LatencyHistogram, SinceRefusesAnEarlierValueThatIsNotBelow) {
  LatencyHistogram a(1000), b(1000);
  a.record(5000);
  a.record(7000);
  b.record(2000);
  b.record(10000);
  EXPECT_FALSE(a.since(b));  // the same count and sum, in other buckets
  LatencyHistogram more = a;
  more.record(5000);
  EXPECT_FALSE(a.since(more));  // fewer calls than the earlier value
}

}  // namespace
}  // namespace funclatency
