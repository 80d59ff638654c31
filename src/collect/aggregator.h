// Folds per-call events and kernel deltas into one LatencyHistogram per
// reported function (a group: one function, or all matches with --merge).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "output/report.h"

namespace funclatency {

// group_of_function value for a function that reports nowhere.
inline constexpr uint32_t kNoGroup = UINT32_MAX;

struct ReportGroup {
  std::string symbol;
  std::string binary;
  int pid = 0;
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
};

class Aggregator {
 public:
  // group_of_function[fn_id] is the index into `groups` that fn_id reports to.
  // With `cpu_split`, every report carries the split of its calls.
  Aggregator(std::vector<ReportGroup> groups, std::vector<uint32_t> group_of_function,
             uint64_t unit_ns, std::chrono::system_clock::time_point run_start,
             bool cpu_split = false);

  void on_event(uint32_t fn_id, uint64_t duration_ns, const CallSplit* split = nullptr);
  // `now` and `before` are the cumulative totals of fn_id's `part` at this
  // read and the previous one.
  void on_kernel_totals(uint32_t fn_id, const KernelTotals& before, const KernelTotals& now,
                        CallPart part = CallPart::kWall);
  void on_lost(uint32_t fn_id, const LostCounts& delta);
  void set_mode(uint32_t fn_id, AggregationMode mode);
  // A function attached while tracing: its own group, or with `merge` the
  // first group (its own when there is none yet).
  void add_function(uint32_t fn_id, ReportGroup group, bool merge);

  // Calls counted for fn_id since the last take_report (for the auto policy).
  uint64_t interval_calls_of_function(uint32_t fn_id) const { return fn_interval_calls_[fn_id]; }

  // The interval's report (and the run's totals); starts a new interval.
  Report take_report(Report::Kind kind, std::chrono::system_clock::time_point now);
  // The same, for sinks that want fresh totals between intervals (an
  // exporter); the interval goes on.
  Report peek_report(std::chrono::system_clock::time_point now) const;

 private:
  void fill_modes(std::vector<FunctionReport>& reports) const;
  FunctionReport new_report(ReportGroup group) const;
  bool reports_to_a_group(uint32_t fn_id) const {
    return fn_id < group_of_function_.size() && group_of_function_[fn_id] < reports_.size();
  }

  uint64_t unit_ns_;
  bool cpu_split_;
  std::vector<FunctionReport> reports_;
  std::vector<uint32_t> group_of_function_;
  std::vector<uint64_t> fn_interval_calls_;
  std::vector<AggregationMode> fn_mode_;
  std::chrono::system_clock::time_point run_start_;
  std::chrono::system_clock::time_point interval_start_;
};

}  // namespace funclatency
