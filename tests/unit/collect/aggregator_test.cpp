#include "collect/aggregator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

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

// --self: a call's self time from events and the self part of kernel
// totals land in the self histogram, next to the wall one; without --self
// reports have none.
TEST(Aggregator, SelfTimeFromEventsAndKernelTotals) {
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0}, 1000, kStart, false, true);
  CallRecord call;
  call.fn_id = 0;
  call.duration_ns = 900000;
  call.self_ns = 200000;
  aggregator.on_call(call);
  KernelTotals before, wall, self;
  wall.count = self.count = 1;
  wall.sum_ns = wall.min_ns = wall.max_ns = 800000;
  wall.buckets[fl_bucket_of(800)]++;
  self.sum_ns = self.min_ns = self.max_ns = 300000;
  self.buckets[fl_bucket_of(300)]++;
  aggregator.on_kernel_totals(0, before, wall, CallPart::kWall);
  aggregator.on_kernel_totals(0, before, self, CallPart::kSelf);
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(1));
  const FunctionReport& f = report.functions.at(0);
  EXPECT_EQ(f.interval.count(), 2u);
  EXPECT_EQ(f.interval.sum_ns(), 1700000u);
  ASSERT_TRUE(f.interval_self && f.total_self);
  EXPECT_EQ(f.interval_self->count(), 2u);
  EXPECT_EQ(f.interval_self->sum_ns(), 500000u);
  EXPECT_EQ(f.interval_self->min_ns(), 200000u);
  EXPECT_EQ(f.total_self->count(), 2u);
  report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(2));
  EXPECT_EQ(report.functions.at(0).interval_self->count(), 0u);
  EXPECT_EQ(report.functions.at(0).total_self->count(), 2u);

  Aggregator plain({{"f", "/bin/x", 0}}, {0}, 1000, kStart);
  plain.on_call(call);
  report = plain.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(1));
  EXPECT_FALSE(report.functions.at(0).interval_self.has_value());
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

namespace funclatency {
namespace {

SlowCall slow_call(uint64_t duration_ns, int tid) {
  SlowCall call;
  call.duration_ns = duration_ns;
  call.pid = 10;
  call.tid = tid;
  return call;
}

TEST(Aggregator, KeepsTheKSlowestCallsOfTheIntervalAndOfTheRun) {
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0}, 1000, kStart);
  aggregator.set_slowest(2);
  for (auto [duration, tid] : {std::pair{5, 1}, {9, 2}, {7, 3}, {9, 4}}) {
    aggregator.on_slow_call(0, {}, slow_call(duration, tid));
  }
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(1));
  ASSERT_EQ(report.functions.size(), 1u);
  EXPECT_EQ(report.functions[0].interval_slowest.size(), 2u);
  aggregator.on_event(0, 9);
  report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(2));
  ASSERT_EQ(report.functions.size(), 1u);
  // The first interval's calls are gone from the interval, kept in the run's.
  EXPECT_TRUE(report.functions[0].interval_slowest.empty());
  const auto& run = report.functions[0].total_slowest;
  ASSERT_EQ(run.size(), 2u);
  EXPECT_EQ(run[0].tid, 2);  // slowest first; of equals, the earlier
  EXPECT_EQ(run[1].tid, 4);

  aggregator.on_slow_call(0, {}, slow_call(8, 5));
  aggregator.on_event(0, 8);
  report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(3));
  ASSERT_EQ(report.functions[0].interval_slowest.size(), 1u);
  EXPECT_EQ(report.functions[0].interval_slowest[0].tid, 5);
  EXPECT_EQ(report.functions[0].total_slowest[1].tid, 4);
}

// --config: a target's own K; a function joining later with its own too.
TEST(Aggregator, EachGroupKeepsItsOwnNumberOfSlowCalls) {
  ReportGroup own{"f", "/bin/x", 0};
  own.slowest = 1;
  Aggregator aggregator({own, {"g", "/bin/x", 0}}, {0, 1}, 1000, kStart);
  aggregator.set_slowest(3);
  ReportGroup later{"h", "/bin/y", 0};
  later.slowest = 2;
  aggregator.join_function(2, later);
  for (uint32_t fn : {0u, 1u, 2u}) {
    for (int tid = 1; tid <= 4; tid++) aggregator.on_slow_call(fn, {}, slow_call(tid * 10, tid));
  }
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(1));
  ASSERT_EQ(report.functions.size(), 3u);
  std::map<std::string, size_t> kept;
  for (const auto& function : report.functions) {
    kept[function.symbol] = function.interval_slowest.size();
    EXPECT_EQ(function.interval_slowest[0].tid, 4);  // the slowest first
  }
  EXPECT_EQ(kept, (std::map<std::string, size_t>{{"f", 1}, {"g", 3}, {"h", 2}}));
}

TEST(Aggregator, SlowCallsGoToTheirSeries) {
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0}, 1000, kStart);
  aggregator.set_slowest(3);
  aggregator.set_series({.by = FL_BY_PID});
  aggregator.on_call({0, 100, nullptr, {.tgid = 1}});
  aggregator.on_call({0, 200, nullptr, {.tgid = 2}});
  aggregator.on_slow_call(0, {.tgid = 2}, slow_call(200, 22));
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart + std::chrono::seconds(1));
  for (const auto& function : report.functions) {
    if (function.series.pid == 2) {
      ASSERT_EQ(function.interval_slowest.size(), 1u);
      EXPECT_EQ(function.interval_slowest[0].tid, 22);
    } else {
      EXPECT_TRUE(function.interval_slowest.empty());
    }
  }
}

// --follow: one program in two files (two image versions) reports as one
// function; a function with other labels stays apart.
TEST(Aggregator, JoinedFunctionsShareTheirGroup) {
  Aggregator aggregator({}, {}, 1000, kStart);
  const std::vector<std::pair<std::string, std::string>> labels{{"target", "app"}};
  aggregator.join_function(0, {"slow_op", "/app/x", 0, {}, {}, labels});
  aggregator.join_function(1, {"slow_op", "/app/x", 0, {}, {}, labels});
  aggregator.join_function(2, {"slow_op", "/app/x", 0, {}, {}, {{"target", "other"}}});
  aggregator.on_event(0, 1000);
  aggregator.on_event(1, 2000);
  aggregator.on_event(2, 3000);
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart);
  ASSERT_EQ(report.functions.size(), 2u);
  EXPECT_EQ(report.functions[0].interval.count(), 2u);
  EXPECT_EQ(report.functions[0].labels, labels);
  EXPECT_EQ(report.functions[1].interval.count(), 1u);
}

// A removed function's calls since the last report are in one more report
// of each kind (intervals, exporters' running totals), then it is gone.
TEST(Aggregator, ARemovedFunctionIsReportedOnceMoreThenGone) {
  Aggregator aggregator({}, {}, 1000, kStart);
  aggregator.join_function(0, {"kept", "/app/x", 0});
  aggregator.join_function(1, {"removed", "/app/x", 0});
  aggregator.on_event(0, 1000);
  aggregator.on_event(1, 1000);
  aggregator.remove_function(1);
  aggregator.on_event(1, 1000);  // a call in flight when the probes went: not counted
  Report live = aggregator.peek_report(kStart);
  ASSERT_EQ(live.functions.size(), 2u);
  Report interval = aggregator.take_report(Report::Kind::kInterval, kStart);
  ASSERT_EQ(interval.functions.size(), 2u);
  EXPECT_EQ(interval.functions[1].symbol, "removed");
  EXPECT_EQ(interval.functions[1].interval.count(), 1u);
  EXPECT_EQ(aggregator.take_report(Report::Kind::kInterval, kStart).functions.size(), 1u);
  EXPECT_EQ(aggregator.peek_report(kStart).functions.size(), 1u);
}

// --follow: what the probes cost, from each function's calibrated cost,
// counting timed and lost calls, and never going down.
TEST(Aggregator, ProbeCostGrowsWithEveryCall) {
  Aggregator aggregator({}, {}, 1000, kStart);
  ReportGroup cheap{"a", "/x", 0};
  cheap.probe_cost_ns = 100;
  ReportGroup dear{"b", "/x", 0};
  dear.probe_cost_ns = 1000;
  aggregator.join_function(0, cheap);
  aggregator.join_function(1, dear);
  aggregator.on_event(0, 5);
  aggregator.on_event(1, 5);
  aggregator.on_lost(1, LostCounts{.unreturned = 2});
  EXPECT_EQ(aggregator.take_report(Report::Kind::kInterval, kStart).probe_cpu_ns, 3100u);
  aggregator.remove_function(1);
  aggregator.on_event(0, 5);
  EXPECT_EQ(aggregator.peek_report(kStart).probe_cpu_ns, 3200u);
}

// --config: a target's own --by within the run's; one without series has
// no `other`.
TEST(Aggregator, AGroupSplitsByItsOwnSeries) {
  Aggregator aggregator({}, {}, 1000, kStart);
  SeriesOptions options{.by = FL_BY_PID | FL_BY_CGROUP};
  options.label = [](const SeriesKey& key) {
    return SeriesLabels{.cgroup = "/c" + std::to_string(key.cgroup_id)};
  };
  aggregator.set_series(options);
  ReportGroup by_pid{"f", "/a", 0};
  by_pid.series_by = FL_BY_PID;
  ReportGroup plain{"g", "/b", 0};
  plain.series_by = 0;
  aggregator.join_function(0, by_pid);
  aggregator.join_function(1, plain);
  for (uint32_t tgid : {10u, 11u}) {
    aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {tgid, 7, "x"}});
    aggregator.on_call({.fn_id = 1, .duration_ns = 1000, .series = {tgid, 7, "x"}});
  }
  Report report = aggregator.take_report(Report::Kind::kInterval, kStart);
  std::map<std::pair<std::string, int>, uint64_t> counts;
  for (const auto& f : report.functions) {
    EXPECT_FALSE(f.series.cgroup) << f.symbol;
    EXPECT_FALSE(f.series.other) << f.symbol;
    counts[{f.symbol, f.series.pid.value_or(0)}] += f.interval.count();
  }
  EXPECT_EQ(counts, (std::map<std::pair<std::string, int>, uint64_t>{
                        {{"f", 10}, 1}, {{"f", 11}, 1}, {{"g", 0}, 2}}));
}

}  // namespace
}  // namespace funclatency

namespace funclatency {
namespace {

using std::chrono::seconds;

// What a report shows of each cgroup series: {cgroup id: (calls this
// interval, whether it ended)}; `other` under 0.
std::map<uint64_t, std::pair<uint64_t, bool>> shown_cgroups(const Report& report) {
  std::map<uint64_t, std::pair<uint64_t, bool>> shown;
  for (const auto& f : report.functions) {
    const uint64_t id = f.series.other ? 0 : std::stoull(f.series.cgroup->substr(1));
    shown[id] = {f.interval.count(), f.series_ended};
  }
  return shown;
}

// Series by cgroup, room for one, ended 10 s after their cgroups empty.
struct CgroupSeries {
  Aggregator aggregator{{{"f", "/bin/x", 0}}, {0}, 1000, kStart};
  std::set<uint64_t> gone;
  CgroupSeries() {
    SeriesOptions options{.by = FL_BY_CGROUP, .max_series = 1};
    options.label = [](const SeriesKey& key) {
      return SeriesLabels{.cgroup = "/" + std::to_string(key.cgroup_id)};
    };
    options.gone = [this](const SeriesKey& key, uint32_t) { return gone.contains(key.cgroup_id); };
    options.expiry = seconds(10);
    aggregator.set_series(options);
  }
  Report interval(int at_seconds) {
    aggregator.end_idle_series(kStart + seconds(at_seconds));
    return aggregator.take_report(Report::Kind::kInterval, kStart + seconds(at_seconds));
  }
};

// A container's series ends once its cgroup is gone and it had no call for
// the expiry: shown once more, marked, then dropped; its room goes to the
// next container, which gets a series of its own instead of `other`.
TEST(SeriesExpiry, AnEndedSeriesLeavesRoomForTheNext) {
  CgroupSeries s;
  for (int i = 0; i < 3; i++)
    s.aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.cgroup_id = 11}});
  EXPECT_EQ(shown_cgroups(s.interval(5)),
            (std::map<uint64_t, std::pair<uint64_t, bool>>{{11, {3, false}}}));
  s.gone.insert(11);
  // Gone, but quiet for less than the expiry: still a series.
  s.aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.cgroup_id = 11}});
  EXPECT_EQ(shown_cgroups(s.interval(10)),
            (std::map<uint64_t, std::pair<uint64_t, bool>>{{11, {1, false}}}));
  EXPECT_EQ(shown_cgroups(s.interval(15)).at(11), std::make_pair(uint64_t{0}, false));
  // Quiet since 10 s: at 20 s it ends, with the calls since the last report.
  s.aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.cgroup_id = 22}});
  Report ending = s.interval(20);
  EXPECT_EQ(shown_cgroups(ending).at(11), std::make_pair(uint64_t{0}, true));
  EXPECT_EQ(shown_cgroups(ending).at(0), std::make_pair(uint64_t{1}, false));  // no room then
  EXPECT_EQ(ending.series_expired, 1u);
  EXPECT_EQ(ending.series_folded, 1u);
  // Dropped: the next container has its own series.
  s.aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.cgroup_id = 33}});
  Report after = s.interval(25);
  auto shown = shown_cgroups(after);
  EXPECT_FALSE(shown.contains(11));
  EXPECT_EQ(shown.at(33), std::make_pair(uint64_t{1}, false));
  EXPECT_EQ(after.series_expired, 1u);
}

// A cgroup that still has processes keeps its series however quiet; a call
// restarts the quiet time.
TEST(SeriesExpiry, LiveOrBusySeriesStay) {
  CgroupSeries s;
  s.aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.cgroup_id = 11}});
  for (int at = 0; at <= 100; at += 10) EXPECT_TRUE(s.interval(at).functions.size() == 1);
  s.gone.insert(11);
  for (int at = 101; at <= 131; at += 5) {
    s.aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.cgroup_id = 11}});
    EXPECT_FALSE(shown_cgroups(s.interval(at)).at(11).second) << at;
  }
  EXPECT_FALSE(shown_cgroups(s.interval(140)).at(11).second);
  EXPECT_TRUE(shown_cgroups(s.interval(141)).at(11).second);
  EXPECT_TRUE(s.interval(150).functions.empty());
}

// A --by pid series ends at the first judgement after its process exited:
// nothing can call in it again.
TEST(SeriesExpiry, APidSeriesEndsOnceItsProcessExited) {
  Aggregator aggregator({{"f", "/bin/x", 0}}, {0}, 1000, kStart);
  std::set<uint32_t> exited;
  SeriesOptions options{.by = FL_BY_PID, .max_series = 1};
  options.gone = [&exited](const SeriesKey& key, uint32_t by) {
    EXPECT_EQ(by, FL_BY_PID);
    return exited.contains(key.tgid);
  };
  aggregator.set_series(options);
  aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.tgid = 5, .comm = "a"}});
  exited.insert(5);
  auto ended = aggregator.end_idle_series(kStart + seconds(1));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].second.tgid, 5u);
  // The peek (an exporter's snapshot) is the report it ends in here.
  Report last = aggregator.peek_report(kStart + seconds(1));
  ASSERT_EQ(last.functions.size(), 1u);
  EXPECT_TRUE(last.functions[0].series_ended);
  EXPECT_EQ(last.functions[0].total.count(), 1u);
  EXPECT_TRUE(aggregator.peek_report(kStart + seconds(2)).functions.empty());
  aggregator.on_call({.fn_id = 0, .duration_ns = 1000, .series = {.tgid = 6, .comm = "b"}});
  Report next = aggregator.take_report(Report::Kind::kInterval, kStart + seconds(3));
  ASSERT_EQ(next.functions.size(), 1u);
  EXPECT_EQ(next.functions[0].series.pid, 6);
  EXPECT_EQ(next.series_folded, 0u);
}

}  // namespace
}  // namespace funclatency
