#include "collect/aggregator.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

auto kStart = std::chrono::system_clock::time_point(std::chrono::seconds(1000));

TEST(Aggregator, EventsAndKernelDeltasLandInTheSameHistogram) {
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0}, 1000, kStart);
  aggregator.on_event(0, 300000);
  KernelTotals before, now;
  now.count = 2;
  now.sum_ns = 600000 + 700000;
  now.min_ns = 600000;
  now.max_ns = 700000;
  now.buckets[fl_bucket_of(600)]++;
  now.buckets[fl_bucket_of(700)]++;
  aggregator.on_kernel_totals(0, before, now);
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(1));
  ASSERT_EQ(report.functions.size(), 1u);
  const auto& h = report.functions[0].interval;
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.sum_ns(), 1600000u);
  EXPECT_EQ(h.min_ns(), 300000u);
  EXPECT_EQ(h.max_ns(), 700000u);
  EXPECT_EQ(report.functions[0].total.count(), 3u);

  // The next interval starts empty; the total keeps growing.
  KernelTotals later = now;
  later.count = 3;
  later.sum_ns += 650000;
  later.buckets[fl_bucket_of(650)]++;
  aggregator.on_kernel_totals(0, now, later);
  report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(2));
  EXPECT_EQ(report.functions[0].interval.count(), 1u);
  EXPECT_EQ(report.functions[0].interval.sum_ns(), 650000u);
  // Cumulative min/max did not move: the interval's extremes come from its bucket.
  EXPECT_GE(report.functions[0].interval.min_ns(), 640000u);
  EXPECT_LE(report.functions[0].interval.max_ns(), 700000u);
  EXPECT_EQ(report.functions[0].total.count(), 4u);
  EXPECT_EQ(report.interval_start, kStart + std::chrono::seconds(1));
}

TEST(Aggregator, MergedGroupsAndLostCounts) {
  Aggregator aggregator({{"2 functions", "/bin/x", 7}}, {0, 0}, 1000, kStart);
  aggregator.on_event(0, 1000);
  aggregator.on_event(1, 2000);
  aggregator.on_lost(1, LostCounts{1, 0, 2});
  aggregator.set_mode(1, AggregationMode::kKernel);
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart);
  EXPECT_EQ(report.functions[0].interval.count(), 2u);
  EXPECT_EQ(report.functions[0].interval_lost.total(), 3u);
  EXPECT_EQ(report.functions[0].mode, AggregationMode::kMixed);
  EXPECT_EQ(report.ringbuf_dropped_total, 2u);
  EXPECT_EQ(report.functions[0].pid, 7);
}

TEST(Aggregator, FunctionsAttachedLaterGetTheirOwnGroupOrJoinTheMergedOne) {
  // Two ids were reserved for functions of a library loaded later.
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0, kNoGroup, kNoGroup}, 1000, kStart);
  aggregator.on_event(1, 5000);  // no probe reports to an unused id
  aggregator.add_function(1, {"late", "/plugins/libp.so", 9}, false);
  aggregator.on_event(1, 6000);
  aggregator.add_function(4, {"later", "/plugins/libq.so", 9}, false);  // past the end
  aggregator.on_event(4, 7000);
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart);
  ASSERT_EQ(report.functions.size(), 3u);
  EXPECT_EQ(report.functions[1].symbol, "late");
  EXPECT_EQ(report.functions[1].interval.count(), 1u);
  EXPECT_EQ(report.functions[1].interval.sum_ns(), 6000u);
  EXPECT_EQ(report.functions[2].binary, "/plugins/libq.so");
  EXPECT_EQ(report.functions[2].interval.count(), 1u);

  Aggregator merged({{"all", "/bin/x", 0}}, {0, kNoGroup}, 1000, kStart);
  merged.add_function(1, {"late", "/plugins/libp.so", 0}, true);
  merged.on_event(1, 1000);
  report = merged.take_report(Report::Kind::kInterval, kStart);
  ASSERT_EQ(report.functions.size(), 1u);
  EXPECT_EQ(report.functions[0].interval.count(), 1u);

  // Merged, with nothing traced at the start: the first late function opens the group.
  Aggregator empty({}, {kNoGroup}, 1000, kStart);
  empty.add_function(0, {"late", "/plugins/libp.so", 0}, true);
  empty.add_function(1, {"late2", "/plugins/libp.so", 0}, true);
  empty.on_event(1, 1000);
  report = empty.take_report(Report::Kind::kInterval, kStart);
  ASSERT_EQ(report.functions.size(), 1u);
  EXPECT_EQ(report.functions[0].interval.count(), 1u);
}

TEST(Aggregator, IgnoresUnknownFunctionIds) {
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0}, 1000, kStart);
  aggregator.on_event(5, 1000);
  EXPECT_EQ(aggregator.take_report(Report::Kind::kInterval, kStart).functions[0].interval.count(),
            0u);
}

}  // namespace
}  // namespace funclatency
