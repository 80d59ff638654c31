// The diff statistics on hand-made histograms: known G values, the
// superiority A, row merging, verdicts and the --fail-if-slower gate.
#include "offline/run_diff.h"

#include <gtest/gtest.h>

#include <cmath>

#include "offline/bucket_math.h"

namespace funclatency::offline {
namespace {

// A run of one function whose intervals all hold `rows` (usec log2 rows).
Run run_of(const std::vector<std::vector<uint64_t>>& intervals) {
  Run run;
  run.unit_ns = 1000;
  Series s;
  s.key = {"f", "/b/app", {}, "", ""};
  for (const auto& rows : intervals) {
    Record r;
    for (uint32_t row = 0; row < rows.size(); ++row) {
      if (!rows[row]) continue;
      r.wall.buckets.push_back({row_low_ns(row, 1000), row_high_ns(row, 1000), rows[row]});
      r.wall.count += rows[row];
      r.wall.sum_ns += rows[row] * row_low_ns(row, 1000) * 3 / 2;
    }
    s.intervals.push_back(r);
  }
  run.series.push_back(s);
  return run;
}

TEST(DiffStatistics, GTestAndSuperiorityHaveKnownValues) {
  // 2x2 table [[10, 20], [20, 10]]: G = 2 * sum O ln(O/E), E = 15.
  EXPECT_NEAR(g_test({10, 20}, {20, 10}), 4 * (10 * std::log(10 / 15.0) + 20 * std::log(20 / 15.0)),
              1e-9);
  EXPECT_DOUBLE_EQ(g_test({10, 20}, {10, 20}), 0);
  EXPECT_DOUBLE_EQ(superiority({0, 10}, {0, 0, 10}), 1.0);
  EXPECT_DOUBLE_EQ(superiority({0, 10}, {0, 10}), 0.5);
  EXPECT_NEAR(chi_square_q(3.841, 1), 0.05, 1e-3);
  EXPECT_NEAR(f_q(4.35, 1, 20), 0.05, 2e-3);
}

TEST(DiffStatistics, MergesSparseRowsUntilEveryCellExpectsFive) {
  // Rows 0..4; the sparse tail rows 3 and 4 go together with row 2.
  const std::vector<size_t> starts = merge_rows({0, 50, 40, 1, 1}, {0, 50, 40, 2, 0});
  EXPECT_EQ(starts, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(grouped({0, 50, 40, 1, 1}, starts), (std::vector<double>{50, 42}));
}

TEST(DiffStatistics, SameDistributionIsNoChangeAndAShiftIsSlower) {
  const std::vector<uint64_t> base = {0, 0, 0, 0, 0, 0, 0, 0, 300, 200, 100};
  const std::vector<uint64_t> shifted = {0, 0, 0, 0, 0, 0, 0, 0, 0, 300, 200, 100};
  std::vector<std::vector<uint64_t>> ten(10, base), ten_shifted(10, shifted);
  // Poisson-like scatter between intervals.
  for (size_t i = 0; i < 10; ++i) ten[i][8] += i % 3, ten_shifted[i][9] += i % 2;
  auto same = diff_runs(run_of(ten), run_of(ten), {}, Gate{20, 0.95});
  ASSERT_EQ(same.functions.size(), 1u);
  EXPECT_EQ(same.functions[0].verdict, Verdict::kNoChange);
  EXPECT_FALSE(same.gate_failed);
  auto slower = diff_runs(run_of(ten), run_of(ten_shifted), {}, Gate{20, 0.95});
  EXPECT_EQ(slower.functions[0].verdict, Verdict::kSlower);
  EXPECT_GT(slower.functions[0].superiority, 0.8);
  EXPECT_TRUE(slower.gate_failed);
  EXPECT_NEAR(slower.functions[0].gated_ratio, 2.0, 0.05);
  auto faster = diff_runs(run_of(ten_shifted), run_of(ten), {}, Gate{20, 0.95});
  EXPECT_EQ(faster.functions[0].verdict, Verdict::kFaster);
  EXPECT_FALSE(faster.gate_failed);
}

TEST(DiffStatistics, ScatterBetweenIntervalsWidensTheNoiseScale) {
  // Intervals that swing between two shapes: a small difference between the
  // runs is within that swing, so it is not significant.
  std::vector<std::vector<uint64_t>> a, b;
  for (int i = 0; i < 10; ++i) {
    a.push_back(i % 2 ? std::vector<uint64_t>{0, 200, 100} : std::vector<uint64_t>{0, 100, 200});
    b.push_back(i % 2 ? std::vector<uint64_t>{0, 210, 90} : std::vector<uint64_t>{0, 110, 190});
  }
  auto result = diff_runs(run_of(a), run_of(b), {}, std::nullopt);
  EXPECT_GT(result.functions[0].dispersion, 10);
  EXPECT_FALSE(result.functions[0].distribution_differs);
  // The same totals as single intervals (no scatter known): significant.
  auto pooled = diff_runs(run_of({{0, 1500, 1500}}), run_of({{0, 1600, 1400}}), {}, std::nullopt);
  EXPECT_TRUE(pooled.functions[0].distribution_differs);
}

TEST(DiffStatistics, FunctionsOnOneSideOnly) {
  offline::Run other = run_of({{0, 10}});
  other.series[0].key.symbol = "g";
  auto result = diff_runs(run_of({{0, 10}}), other, {}, std::nullopt);
  ASSERT_EQ(result.functions.size(), 2u);
  EXPECT_EQ(result.functions[0].verdict, Verdict::kOnlyBase);
  EXPECT_EQ(result.functions[1].verdict, Verdict::kOnlyNew);
}

// --self runs: each function's self time is compared as "NAME [self]"; runs
// without it have no such rows.
TEST(DiffStatistics, SelfTimeIsComparedAsAFunctionOfItsOwn) {
  const std::vector<uint64_t> rows = {0, 0, 0, 0, 0, 0, 0, 0, 50, 50};
  offline::Run base = run_of({rows, rows, rows, rows, rows, rows});
  offline::Run now = base;
  for (offline::Run* run : {&base, &now}) {
    for (Record& r : run->series[0].intervals) r.self = r.wall;
  }
  // The new run's self time moved two rows up.
  for (Record& r : now.series[0].intervals) {
    for (Bucket& b : r.self->buckets) {
      const uint32_t row = row_of(b.low_ns, 1000) + 2;
      b = {row_low_ns(row, 1000), row_high_ns(row, 1000), b.count};
    }
  }
  DiffResult result = diff_runs(base, now, DiffOptions{}, std::nullopt);
  ASSERT_EQ(result.functions.size(), 2u);
  EXPECT_EQ(result.functions[0].symbol, "f");
  EXPECT_EQ(result.functions[0].verdict, Verdict::kNoChange);
  EXPECT_EQ(result.functions[1].symbol, "f [self]");
  EXPECT_EQ(result.functions[1].verdict, Verdict::kSlower) << result.functions[1].p_value;
  EXPECT_EQ(
      diff_runs(run_of({{0, 5}}), run_of({{0, 5}}), DiffOptions{}, std::nullopt).functions.size(),
      1u);
}

TEST(DiffGate, ParsesPercentAndPercentile) {
  EXPECT_EQ(parse_gate("20")->quantile, 0.95);
  EXPECT_EQ(parse_gate("12.5@p99")->percent, 12.5);
  EXPECT_EQ(parse_gate("10@p50")->quantile, 0.50);
  EXPECT_FALSE(parse_gate("x"));
  EXPECT_FALSE(parse_gate("10@p90"));
  EXPECT_FALSE(parse_gate("-5"));
}

}  // namespace
}  // namespace funclatency::offline
