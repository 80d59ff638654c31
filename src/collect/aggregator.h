// Folds per-call events and kernel deltas into one LatencyHistogram per
// reported function (a group: one function, or all matches with --merge).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/funclatency.h"
#include "model/report.h"

namespace funclatency {

// group_of_function value for a function that reports nowhere.
inline constexpr uint32_t kNoGroup = UINT32_MAX;

struct ReportGroup {
  std::string symbol;
  std::string binary;
  int pid = 0;
  // With -p: the container the process runs in, where its cgroup names one.
  std::optional<std::string> container_id;
  std::optional<std::string> pod_uid;
  // --config: the target's name ("target") and its extra labels.
  std::vector<std::pair<std::string, std::string>> labels;
  uint64_t probe_cost_ns = 0;  // --follow/--config: calibrated probe cost of a call
  // --config: the target's own --by (FL_BY_* bits, within the run's); unset:
  // the run's.
  std::optional<uint32_t> series_by;
  // --config: the target's own --slowest K; unset: the run's.
  std::optional<size_t> slowest;
  // A span (model/span.h): `symbol` is its name.
  bool span = false;
};

// Cumulative in-kernel totals of one function, summed over CPUs.
struct KernelTotals {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t min_ns = 0;  // 0 while no call was recorded
  uint64_t max_ns = 0;
  std::array<uint64_t, LatencyHistogram::kNumBuckets> buckets{};
};

// --cpu-split: how long one call was switched out; on-CPU is the rest.
struct CallSplit {
  uint64_t runnable_ns = 0;  // waiting for a CPU
  uint64_t blocked_ns = 0;   // sleeping
};

// Which histogram of a function kernel totals belong to (enum fl_call_part).
enum class CallPart : uint32_t {
  kWall = FL_PART_WALL,
  kOnCpu = FL_PART_ONCPU,
  kRunnable = FL_PART_RUNNABLE,
  kBlocked = FL_PART_BLOCKED,
  kSelf = FL_PART_SELF,
};

// --by: who made a call, as far as --by asks (the rest is 0 / empty).
struct SeriesKey {
  uint32_t tgid = 0;
  uint64_t cgroup_id = 0;
  std::string comm;
  uint64_t value = 0;  // --by retval/argN: the class fl_value_of gave the call
  auto operator<=>(const SeriesKey&) const = default;
};

struct SeriesOptions {
  uint32_t by = 0;  // FL_BY_* bits; 0: no series (one report per group)
  // Series alive at once (an ended series leaves room for a new one).
  size_t max_series = 1000;
  // Labels of a new series (cgroup path, container): I/O the caller owns.
  std::function<SeriesLabels(const SeriesKey&)> label;
  // Whether the processes a series stands for are all gone, its key holding
  // the parts `by` (FL_BY_* bits) keeps: with pid, the process exited; with
  // cgroup, the cgroup was removed or holds no process; a key naming no
  // process (comm, a value) is gone as far as anyone can tell. I/O the
  // caller owns; empty: series never end.
  std::function<bool(const SeriesKey&, uint32_t by)> gone;
  // A series whose processes are gone and that had no call for this long is
  // reported once more, then dropped; a --by pid series after pid_expiry (0
  // unless asked: a process that exited cannot call again).
  std::chrono::milliseconds expiry{30'000};
  std::chrono::milliseconds pid_expiry{0};
};

// A series as the aggregator keys it: its group and the key its group's
// --by keeps.
using SeriesId = std::pair<uint32_t, SeriesKey>;

// One completed call as the ring buffer delivers it.
struct CallRecord {
  uint32_t fn_id = 0;
  uint64_t duration_ns = 0;
  const CallSplit* split = nullptr;  // --cpu-split, when known
  SeriesKey series;                  // --by
  bool odd_gen = false;  // --slowest/--slower-than: the interval's parity (FL_EVENT_ODD_GEN)
  std::optional<uint64_t> self_ns;  // --self: the call's exclusive time
};

class Aggregator {
 public:
  // group_of_function[fn_id] is the index into `groups` that fn_id reports to.
  // With `cpu_split`, every report carries the split of its calls; with
  // `self_time`, their exclusive time.
  Aggregator(std::vector<ReportGroup> groups, std::vector<uint32_t> group_of_function,
             uint64_t unit_ns, std::chrono::system_clock::time_point run_start,
             bool cpu_split = false, bool self_time = false);

  void on_event(uint32_t fn_id, uint64_t duration_ns, const CallSplit* split = nullptr);
  void on_call(const CallRecord& call);
  // --by in kernel mode: totals of one series' `part` (key as the BPF side
  // keys it: the parts --by leaves out are 0).
  void on_kernel_series_totals(uint32_t fn_id, const SeriesKey& key, CallPart part,
                               const KernelTotals& before, const KernelTotals& now);
  void set_series(SeriesOptions options) { series_ = std::move(options); }
  // Series folded into `other` so far (the kernel counts those of kernel mode).
  void set_kernel_series_folded(uint64_t folded) { kernel_folded_ = folded; }
  // Ends the series whose processes are gone (SeriesOptions::gone) and
  // that had no call for SeriesOptions::expiry by `now`: the next report
  // (take_report's or peek_report's) shows them for the last time
  // (FunctionReport::series_ended), then they are dropped and their room is
  // free. Judge before the last drain and read of their calls, so that
  // report has them all. Returns the series ended now.
  std::vector<SeriesId> end_idle_series(std::chrono::system_clock::time_point now);
  // The series a call of fn_id by `caller` counts in (none without --by).
  std::optional<SeriesId> series_of(uint32_t fn_id, const SeriesKey& caller) const;
  // `now` and `before` are the cumulative totals of fn_id's `part` at this
  // read and the previous one.
  void on_kernel_totals(uint32_t fn_id, const KernelTotals& before, const KernelTotals& now,
                        CallPart part = CallPart::kWall);
  void on_lost(uint32_t fn_id, const LostCounts& delta);
  // --slowest K: each report keeps the K slowest calls of its interval and
  // of the run (0: none kept).
  void set_slowest(size_t k) { slowest_ = k; }
  // The symbol and binary fn_id reports under; none when it reports nowhere.
  std::optional<std::pair<std::string, std::string>> name_of(uint32_t fn_id) const;
  // A call over its function's threshold, made by `caller` (as on_call).
  void on_slow_call(uint32_t fn_id, const SeriesKey& caller, const SlowCall& call);
  void set_mode(uint32_t fn_id, AggregationMode mode);
  // A function attached while tracing: its own group, or with `merge` the
  // first group (its own when there is none yet).
  void add_function(uint32_t fn_id, ReportGroup group, bool merge);
  // Like add_function, but a function with the same symbol, binary and
  // labels as a group's joins it (one program in two files: two image
  // versions of a container's program report as one function).
  void join_function(uint32_t fn_id, ReportGroup group);
  // The function reports nowhere from now on; its group (and the group's
  // series) leave the reports once no function reports to it.
  void remove_function(uint32_t fn_id);

  // Calls counted for fn_id since the last take_report (for the auto policy).
  uint64_t interval_calls_of_function(uint32_t fn_id) const { return fn_interval_calls_[fn_id]; }

  // The interval's report (and the run's totals); starts a new interval.
  Report take_report(Report::Kind kind, std::chrono::system_clock::time_point now);
  // The same, for sinks that want fresh totals between intervals (an
  // exporter); the interval goes on.
  Report peek_report(std::chrono::system_clock::time_point now);

 private:
  void fill_modes(std::vector<FunctionReport>& reports) const;
  FunctionReport new_report(ReportGroup group) const;
  void keep_group_settings(size_t index, const ReportGroup& group);
  // The report a call of fn_id by `key` goes to (its series, or `other`).
  FunctionReport* report_of(uint32_t fn_id, const SeriesKey& key);
  // The --by a group's calls are split by: its own within the run's.
  uint32_t by_of_group(size_t group) const;
  void add_call(FunctionReport& report, const CallRecord& call);
  void add_kernel_part(FunctionReport& report, uint32_t fn_id, CallPart part,
                       const KernelTotals& before, const KernelTotals& now);
  // After a report: the series it showed for the last time are dropped.
  void drop_ended_series();
  bool is_series(size_t index) const {
    return index < series_group_.size() && series_group_[index].has_value();
  }
  bool is_free(size_t index) const { return index < free_.size() && free_[index]; }
  // By report index: a group no function reports to any more is in one more
  // report (take_report's and peek_report's each), then gone.
  enum class RemoveState : uint8_t { kLive, kLastReport, kGone };
  static void advance_removal(std::vector<RemoveState>& states);
  std::vector<FunctionReport> visible(const std::vector<FunctionReport>& reports,
                                      bool totals_merged,
                                      const std::vector<RemoveState>& removed_states) const;
  // take_report's and peek_report's common part: merges each of `reports`'
  // interval into its total and reports them as they then are.
  Report merged_report(Report::Kind kind, std::chrono::system_clock::time_point now,
                       std::vector<FunctionReport>& reports,
                       std::vector<RemoveState>& removed_states);
  bool reports_to_a_group(uint32_t fn_id) const {
    return fn_id < group_of_function_.size() && group_of_function_[fn_id] < reports_.size();
  }

  uint64_t unit_ns_;
  bool cpu_split_;
  bool self_time_;
  size_t slowest_ = 0;
  std::vector<FunctionReport> reports_;
  std::vector<uint32_t> group_of_function_;
  std::vector<uint64_t> fn_interval_calls_;
  std::vector<AggregationMode> fn_mode_;
  std::vector<uint64_t> fn_cost_ns_;
  std::vector<std::optional<size_t>> group_slowest_;  // by group index: ReportGroup::slowest
  std::vector<std::optional<uint32_t>> group_by_;     // by group index: ReportGroup::series_by  //
                                                      // ReportGroup::probe_cost_ns of each function
  uint64_t probe_cpu_ns_ = 0;
  SeriesOptions series_;
  std::map<std::pair<uint32_t, SeriesKey>, size_t> series_index_;  // (group, key) -> reports_
  std::vector<std::optional<uint32_t>> series_group_;  // by report index: a series' group
  std::vector<RemoveState> removed_;
  std::vector<RemoveState> live_removed_;
  // By report index, for series: how many calls it had when last judged,
  // since when it had no new one, and whether it ended (in the next report
  // for the last time).
  struct SeriesLife {
    uint64_t calls = 0;
    std::optional<std::chrono::system_clock::time_point> quiet_since;
    bool ended = false;
  };
  std::vector<SeriesLife> life_;
  std::vector<bool> free_;  // by report index: a dropped series' room, for the next one
  uint64_t expired_ = 0;    // series ended so far
  uint64_t folded_ = 0;     // distinct series folded into other (events mode)
  uint64_t kernel_folded_ = 0;
  std::map<std::pair<uint32_t, SeriesKey>, bool> folded_keys_;
  std::chrono::system_clock::time_point run_start_;
  std::chrono::system_clock::time_point interval_start_;
};

}  // namespace funclatency
