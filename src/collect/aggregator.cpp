#include "collect/aggregator.h"

#include <algorithm>

namespace funclatency {

Aggregator::Aggregator(std::vector<ReportGroup> groups, std::vector<uint32_t> group_of_function,
                       uint64_t unit_ns, std::chrono::system_clock::time_point run_start)
    : unit_ns_(unit_ns),
      group_of_function_(std::move(group_of_function)),
      fn_interval_calls_(group_of_function_.size(), 0),
      fn_mode_(group_of_function_.size(), "events"),
      run_start_(run_start),
      interval_start_(run_start) {
  reports_.reserve(groups.size());
  for (auto& group : groups) {
    FunctionReport report{.symbol = std::move(group.symbol),
                          .binary = std::move(group.binary),
                          .pid = group.pid,
                          .mode = "events",
                          .interval = LatencyHistogram(unit_ns_),
                          .total = LatencyHistogram(unit_ns_)};
    reports_.push_back(std::move(report));
  }
}

void Aggregator::on_event(uint32_t fn_id, uint64_t duration_ns) {
  if (!reports_to_a_group(fn_id)) return;
  fn_interval_calls_[fn_id]++;
  reports_[group_of_function_[fn_id]].interval.record(duration_ns);
}

void Aggregator::on_kernel_totals(uint32_t fn_id, const KernelTotals& before,
                                  const KernelTotals& now) {
  if (!reports_to_a_group(fn_id) || now.count <= before.count) return;
  std::array<uint64_t, LatencyHistogram::kNumBuckets> delta{};
  for (size_t i = 0; i < delta.size(); i++) delta[i] = now.buckets[i] - before.buckets[i];
  uint64_t calls = now.count - before.count;
  // Only cumulative min/max exist in the kernel; they belong to this
  // interval when they moved during it. Otherwise the interval's own extremes
  // are bounded by its lowest and highest non-empty buckets.
  uint64_t min_ns = now.min_ns != before.min_ns ? now.min_ns : 0;
  uint64_t max_ns = now.max_ns != before.max_ns ? now.max_ns : 0;
  LatencyHistogram& interval = reports_[group_of_function_[fn_id]].interval;
  uint64_t unit = interval.unit_ns();
  if (min_ns == 0 || max_ns == 0) {
    auto first = std::find_if(delta.begin(), delta.end(), [](uint64_t c) { return c != 0; });
    auto last = std::find_if(delta.rbegin(), delta.rend(), [](uint64_t c) { return c != 0; });
    if (first != delta.end()) {
      auto first_bucket = static_cast<uint32_t>(first - delta.begin());
      auto last_bucket = static_cast<uint32_t>(delta.rend() - last - 1);
      if (min_ns == 0) min_ns = std::max<uint64_t>(now.min_ns, fl_bucket_low(first_bucket) * unit);
      if (max_ns == 0) {
        uint64_t high = last_bucket + 1 < LatencyHistogram::kNumBuckets
                            ? fl_bucket_low(last_bucket + 1) * unit - 1
                            : now.max_ns;
        max_ns = std::min<uint64_t>(now.max_ns, high);
      }
    }
  }
  interval.add_counts(delta, calls, now.sum_ns - before.sum_ns, min_ns, max_ns);
  fn_interval_calls_[fn_id] += calls;
}

void Aggregator::on_lost(uint32_t fn_id, const LostCounts& delta) {
  if (!reports_to_a_group(fn_id)) return;
  reports_[group_of_function_[fn_id]].interval_lost += delta;
}

void Aggregator::set_mode_name(uint32_t fn_id, std::string mode) {
  if (fn_id < fn_mode_.size()) fn_mode_[fn_id] = std::move(mode);
}

void Aggregator::add_function(uint32_t fn_id, ReportGroup group, bool merge) {
  if (fn_id >= group_of_function_.size()) {
    group_of_function_.resize(fn_id + 1, kNoGroup);
    fn_interval_calls_.resize(fn_id + 1, 0);
    fn_mode_.resize(fn_id + 1, "events");
  }
  if (merge && !reports_.empty()) {
    group_of_function_[fn_id] = 0;
    return;
  }
  reports_.push_back(FunctionReport{.symbol = std::move(group.symbol),
                                    .binary = std::move(group.binary),
                                    .pid = group.pid,
                                    .mode = "events",
                                    .interval = LatencyHistogram(unit_ns_),
                                    .total = LatencyHistogram(unit_ns_)});
  group_of_function_[fn_id] = static_cast<uint32_t>(reports_.size() - 1);
}

void Aggregator::fill_modes(std::vector<FunctionReport>& reports) const {
  // A group's mode is its functions' mode, or "mixed" when they differ.
  for (auto& report : reports) report.mode.clear();
  for (uint32_t fn_id = 0; fn_id < group_of_function_.size(); fn_id++) {
    if (!reports_to_a_group(fn_id)) continue;
    std::string& mode = reports[group_of_function_[fn_id]].mode;
    if (mode.empty())
      mode = fn_mode_[fn_id];
    else if (mode != fn_mode_[fn_id])
      mode = "mixed";
  }
}

Report Aggregator::peek_report(std::chrono::system_clock::time_point now) const {
  Report report;
  report.kind = Report::Kind::kInterval;
  report.run_start = run_start_;
  report.interval_start = interval_start_;
  report.time = now;
  report.functions = reports_;
  fill_modes(report.functions);
  for (auto& function : report.functions) {
    function.total.merge(function.interval);
    function.total_lost += function.interval_lost;
    report.ringbuf_dropped_total += function.total_lost.ringbuf;
  }
  return report;
}

Report Aggregator::take_report(Report::Kind kind, std::chrono::system_clock::time_point now) {
  fill_modes(reports_);
  Report report;
  report.kind = kind;
  report.run_start = run_start_;
  report.interval_start = interval_start_;
  report.time = now;
  for (auto& function : reports_) {
    function.total.merge(function.interval);
    function.total_lost += function.interval_lost;
    report.ringbuf_dropped_total += function.total_lost.ringbuf;
  }
  report.functions = reports_;
  for (auto& function : reports_) {
    function.interval.clear();
    function.interval_lost = {};
  }
  std::fill(fn_interval_calls_.begin(), fn_interval_calls_.end(), 0);
  interval_start_ = now;
  return report;
}

}  // namespace funclatency
