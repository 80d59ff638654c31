#include "collect/aggregator.h"

#include <algorithm>
#include <utility>

namespace funclatency {

namespace {

// Series folded into `other` remembered to count each once (events mode);
// past this many the count is a bound, as the kernel's LRU makes it.
constexpr size_t kFoldedKeysKept = 16384;

CpuSplit empty_split(uint64_t unit_ns) {
  return CpuSplit{LatencyHistogram(unit_ns), LatencyHistogram(unit_ns), LatencyHistogram(unit_ns)};
}

LatencyHistogram& part_of(CpuSplit& split, CallPart part) {
  switch (part) {
    case CallPart::kOnCpu:
      return split.oncpu;
    case CallPart::kRunnable:
      return split.runnable;
    case CallPart::kBlocked:
    case CallPart::kWall:
    case CallPart::kSelf:
      break;
  }
  return split.blocked;
}

void merge_split(std::optional<CpuSplit>& into, const std::optional<CpuSplit>& from) {
  if (!into || !from) return;
  into->oncpu.merge(from->oncpu);
  into->runnable.merge(from->runnable);
  into->blocked.merge(from->blocked);
}

void merge_self(std::optional<LatencyHistogram>& into,
                const std::optional<LatencyHistogram>& from) {
  if (into && from) into->merge(*from);
}

void clear_split(std::optional<CpuSplit>& split) {
  if (!split) return;
  split->oncpu.clear();
  split->runnable.clear();
  split->blocked.clear();
}

// One read of a function's cumulative kernel totals, as a histogram.
LatencyHistogram as_histogram(const KernelTotals& totals, uint64_t unit_ns) {
  LatencyHistogram histogram(unit_ns);
  histogram.add_counts(totals.buckets, totals.count, totals.sum_ns, totals.min_ns, totals.max_ns);
  return histogram;
}

// Adds the calls between two reads of cumulative kernel totals. Only
// cumulative min/max exist in the kernel: since_with_bounds() keeps those
// that moved and bounds the others by the interval's buckets.
void add_kernel_delta(LatencyHistogram& interval, const KernelTotals& before,
                      const KernelTotals& now) {
  const uint64_t unit = interval.unit_ns();
  std::optional<LatencyHistogram> delta =
      as_histogram(now, unit).since_with_bounds(as_histogram(before, unit));
  if (delta) interval.merge(*delta);
}

}  // namespace

Aggregator::Aggregator(std::vector<ReportGroup> groups, std::vector<uint32_t> group_of_function,
                       uint64_t unit_ns, std::chrono::system_clock::time_point run_start,
                       bool cpu_split, bool self_time)
    : unit_ns_(unit_ns),
      cpu_split_(cpu_split),
      self_time_(self_time),
      group_of_function_(std::move(group_of_function)),
      fn_interval_calls_(group_of_function_.size(), 0),
      fn_mode_(group_of_function_.size(), AggregationMode::kEvents),
      fn_cost_ns_(group_of_function_.size(), 0),
      run_start_(run_start),
      interval_start_(run_start) {
  reports_.reserve(groups.size());
  for (auto& group : groups) {
    keep_group_settings(reports_.size(), group);
    reports_.push_back(new_report(std::move(group)));
  }
}

// A group's own --by and --slowest, by its index.
void Aggregator::keep_group_settings(size_t index, const ReportGroup& group) {
  if (group.series_by) {
    group_by_.resize(std::max(group_by_.size(), index + 1));
    group_by_[index] = group.series_by;
  }
  if (group.slowest) {
    group_slowest_.resize(std::max(group_slowest_.size(), index + 1));
    group_slowest_[index] = group.slowest;
  }
}

std::optional<std::pair<std::string, std::string>> Aggregator::name_of(uint32_t fn_id) const {
  if (!reports_to_a_group(fn_id)) return std::nullopt;
  const FunctionReport& report = reports_[group_of_function_[fn_id]];
  return std::pair{report.symbol, report.binary};
}

FunctionReport Aggregator::new_report(ReportGroup group) const {
  FunctionReport report{.symbol = std::move(group.symbol),
                        .binary = std::move(group.binary),
                        .pid = group.pid,
                        .mode = AggregationMode::kEvents,
                        .interval = LatencyHistogram(unit_ns_),
                        .total = LatencyHistogram(unit_ns_)};
  report.series.container_id = std::move(group.container_id);
  report.series.pod_uid = std::move(group.pod_uid);
  report.labels = std::move(group.labels);
  report.span = group.span;
  // A span may run on several threads: it has no split of its own.
  if (cpu_split_ && !report.span) {
    report.interval_split = empty_split(unit_ns_);
    report.total_split = empty_split(unit_ns_);
  }
  // Nor self time: no calls are made inside a span.
  if (self_time_ && !report.span) {
    report.interval_self.emplace(unit_ns_);
    report.total_self.emplace(unit_ns_);
  }
  return report;
}

void Aggregator::on_event(uint32_t fn_id, uint64_t duration_ns, const CallSplit* split) {
  on_call(CallRecord{fn_id, duration_ns, split, {}});
}

void Aggregator::on_call(const CallRecord& call) {
  if (!reports_to_a_group(call.fn_id)) return;
  fn_interval_calls_[call.fn_id]++;
  probe_cpu_ns_ += fn_cost_ns_[call.fn_id];
  add_call(*report_of(call.fn_id, call.series), call);
}

uint32_t Aggregator::by_of_group(size_t group) const {
  if (group < group_by_.size() && group_by_[group]) return *group_by_[group] & series_.by;
  return series_.by;
}

std::optional<SeriesId> Aggregator::series_of(uint32_t fn_id, const SeriesKey& caller) const {
  if (!reports_to_a_group(fn_id)) return std::nullopt;
  const uint32_t group = group_of_function_[fn_id];
  const uint32_t by = by_of_group(group);
  if (!by) return std::nullopt;
  // Only what --by asks for tells series apart (as the kernel's keys do).
  SeriesKey key = caller;
  if (!(by & FL_BY_PID)) key.tgid = 0;
  if (!(by & (FL_BY_COMM | FL_BY_PID))) key.comm.clear();
  if (!(by & FL_BY_CGROUP)) key.cgroup_id = 0;
  if (!(by & FL_BY_VALUE)) key.value = 0;
  return SeriesId{group, std::move(key)};
}

FunctionReport* Aggregator::report_of(uint32_t fn_id, const SeriesKey& caller) {
  auto id = series_of(fn_id, caller);
  const uint32_t group = group_of_function_[fn_id];
  if (!id) return &reports_[group];
  if (auto known = series_index_.find(*id); known != series_index_.end()) {
    return &reports_[known->second];
  }
  const uint32_t by = by_of_group(group);
  const SeriesKey& key = id->second;
  if (series_index_.size() >= series_.max_series) {
    // No room: the calls go to the group's own report, `other`. The keys
    // folded are remembered to count each once, up to a bound.
    if (folded_keys_.size() >= kFoldedKeysKept) folded_keys_.clear();
    if (folded_keys_.emplace(*id, true).second) folded_++;
    return &reports_[group];
  }
  FunctionReport report = reports_[group];
  report.interval.clear();
  report.total.clear();
  report.interval_lost = report.total_lost = {};
  report.interval_slowest.clear();
  report.total_slowest.clear();
  report.series_ended = false;
  if (report.interval_split) report.interval_split = report.total_split = empty_split(unit_ns_);
  if (report.interval_self) report.interval_self = report.total_self = LatencyHistogram(unit_ns_);
  report.series = series_.label ? series_.label(key) : SeriesLabels{};
  if (!(by & FL_BY_CGROUP)) {  // a group of its own --by, without cgroups
    report.series.cgroup.reset();
    report.series.container_id.reset();
    report.series.pod_uid.reset();
    report.series.runtime.reset();
  }
  if (by & FL_BY_PID) report.series.pid = static_cast<int>(key.tgid);
  if (by & (FL_BY_COMM | FL_BY_PID)) report.series.comm = key.comm;
  report.series.other = false;
  // The room of a series that ended, or a new one.
  size_t index = reports_.size();
  for (size_t free_index = 0; free_index < free_.size(); free_index++) {
    if (free_[free_index]) {
      index = free_index;
      break;
    }
  }
  series_group_.resize(std::max(series_group_.size(), index + 1));
  series_group_[index] = group;
  life_.resize(std::max(life_.size(), index + 1));
  life_[index] = SeriesLife{};
  for (auto* states : {&removed_, &live_removed_}) {
    if (index < states->size()) (*states)[index] = RemoveState::kLive;
  }
  series_index_.emplace(std::move(*id), index);
  if (index == reports_.size()) {
    reports_.push_back(std::move(report));
  } else {
    free_[index] = false;
    reports_[index] = std::move(report);
  }
  return &reports_[index];
}

void Aggregator::add_call(FunctionReport& report, const CallRecord& call) {
  const uint64_t duration_ns = call.duration_ns;
  const CallSplit* split = call.split;
  report.interval.record(duration_ns);
  if (call.self_ns && report.interval_self) report.interval_self->record(*call.self_ns);
  if (split && report.interval_split) {
    const uint64_t off_cpu = split->runnable_ns + split->blocked_ns;
    report.interval_split->oncpu.record(duration_ns > off_cpu ? duration_ns - off_cpu : 0);
    report.interval_split->runnable.record(split->runnable_ns);
    report.interval_split->blocked.record(split->blocked_ns);
  }
}

void Aggregator::on_kernel_totals(uint32_t fn_id, const KernelTotals& before,
                                  const KernelTotals& now, CallPart part) {
  if (!reports_to_a_group(fn_id) || now.count <= before.count) return;
  // With --by, fn_stats holds the calls folded into `other`: the group's own report.
  add_kernel_part(reports_[group_of_function_[fn_id]], fn_id, part, before, now);
}

// Kernel totals of one part of fn_id's calls, to the histogram they go to.
void Aggregator::add_kernel_part(FunctionReport& report, uint32_t fn_id, CallPart part,
                                 const KernelTotals& before, const KernelTotals& now) {
  if (part == CallPart::kWall) {
    add_kernel_delta(report.interval, before, now);
    fn_interval_calls_[fn_id] += now.count - before.count;
    probe_cpu_ns_ += (now.count - before.count) * fn_cost_ns_[fn_id];
  } else if (part == CallPart::kSelf) {
    if (report.interval_self) add_kernel_delta(*report.interval_self, before, now);
  } else if (report.interval_split) {
    add_kernel_delta(part_of(*report.interval_split, part), before, now);
  }
}

void Aggregator::on_kernel_series_totals(uint32_t fn_id, const SeriesKey& key, CallPart part,
                                         const KernelTotals& before, const KernelTotals& now) {
  if (!reports_to_a_group(fn_id) || now.count <= before.count) return;
  add_kernel_part(*report_of(fn_id, key), fn_id, part, before, now);
}

void Aggregator::on_lost(uint32_t fn_id, const LostCounts& delta) {
  if (!reports_to_a_group(fn_id)) return;
  reports_[group_of_function_[fn_id]].interval_lost += delta;
  probe_cpu_ns_ += delta.total() * fn_cost_ns_[fn_id];
}

namespace {
// Keeps `calls` the k slowest, slowest first (ties: the earlier call stays).
void keep_slowest(std::vector<SlowCall>& calls, const SlowCall& call, size_t k) {
  auto at = std::upper_bound(
      calls.begin(), calls.end(), call.duration_ns,
      [](uint64_t duration, const SlowCall& kept) { return duration > kept.duration_ns; });
  if (static_cast<size_t>(at - calls.begin()) >= k) return;
  calls.insert(at, call);
  if (calls.size() > k) calls.pop_back();
}
}  // namespace

void Aggregator::on_slow_call(uint32_t fn_id, const SeriesKey& caller, const SlowCall& call) {
  if (!reports_to_a_group(fn_id)) return;
  const uint32_t group = group_of_function_[fn_id];
  const size_t k =
      group < group_slowest_.size() && group_slowest_[group] ? *group_slowest_[group] : slowest_;
  if (!k) return;
  FunctionReport& report = *report_of(fn_id, caller);
  keep_slowest(report.interval_slowest, call, k);
  keep_slowest(report.total_slowest, call, k);
}

void Aggregator::set_mode(uint32_t fn_id, AggregationMode mode) {
  if (fn_id < fn_mode_.size()) fn_mode_[fn_id] = mode;
}

void Aggregator::add_function(uint32_t fn_id, ReportGroup group, bool merge) {
  if (fn_id >= group_of_function_.size()) {
    group_of_function_.resize(fn_id + 1, kNoGroup);
    fn_interval_calls_.resize(fn_id + 1, 0);
    fn_mode_.resize(fn_id + 1, AggregationMode::kEvents);
    fn_cost_ns_.resize(fn_id + 1, 0);
  }
  fn_cost_ns_[fn_id] = group.probe_cost_ns;
  if (merge && !reports_.empty()) {
    group_of_function_[fn_id] = 0;
    return;
  }
  keep_group_settings(reports_.size(), group);
  reports_.push_back(new_report(std::move(group)));
  group_of_function_[fn_id] = static_cast<uint32_t>(reports_.size() - 1);
}

void Aggregator::join_function(uint32_t fn_id, ReportGroup group) {
  for (uint32_t index = 0; index < reports_.size(); index++) {
    const FunctionReport& report = reports_[index];
    const bool removed = index < removed_.size() && removed_[index] != RemoveState::kLive;
    if (is_series(index) || is_free(index) || removed || report.symbol != group.symbol ||
        report.binary != group.binary || report.pid != group.pid || report.labels != group.labels) {
      continue;
    }
    add_function(fn_id, std::move(group), false);  // sizes the per-function vectors
    reports_.pop_back();
    group_of_function_[fn_id] = index;
    return;
  }
  add_function(fn_id, std::move(group), false);
}

void Aggregator::remove_function(uint32_t fn_id) {
  if (!reports_to_a_group(fn_id)) return;
  const uint32_t group = group_of_function_[fn_id];
  group_of_function_[fn_id] = kNoGroup;
  if (std::count(group_of_function_.begin(), group_of_function_.end(), group) > 0) return;
  for (auto* states : {&removed_, &live_removed_}) {
    states->resize(reports_.size(), RemoveState::kLive);
    (*states)[group] = RemoveState::kLastReport;
    for (size_t index = 0; index < reports_.size(); index++) {
      if (index < series_group_.size() && series_group_[index] == group) {
        (*states)[index] = RemoveState::kLastReport;
      }
    }
  }
}

void Aggregator::fill_modes(std::vector<FunctionReport>& reports) const {
  // A group's mode is its functions' mode, or kMixed when they differ.
  std::vector<bool> seen(reports.size(), false);
  for (uint32_t fn_id = 0; fn_id < group_of_function_.size(); fn_id++) {
    if (!reports_to_a_group(fn_id)) continue;
    uint32_t group = group_of_function_[fn_id];
    AggregationMode& mode = reports[group].mode;
    if (!seen[group])
      mode = fn_mode_[fn_id];
    else if (mode != fn_mode_[fn_id])
      mode = AggregationMode::kMixed;
    seen[group] = true;
  }
  // A series is aggregated the way its function is.
  for (const auto& [group_key, index] : series_index_) {
    if (index < reports.size()) reports[index].mode = reports[group_key.first].mode;
  }
}

// With --by: a group's own report holds the calls folded into `other`; it is
// shown once it has any. A series that ended is shown for the last time.
std::vector<FunctionReport> Aggregator::visible(
    const std::vector<FunctionReport>& reports, bool totals_merged,
    const std::vector<RemoveState>& removed_states) const {
  // A removed group is in one more report of each kind (its calls since the
  // last one), then gone.
  auto removed = [&removed_states](size_t index) {
    return index < removed_states.size() && removed_states[index] == RemoveState::kGone;
  };
  std::vector<FunctionReport> shown;
  if (!series_.by) {
    for (size_t index = 0; index < reports.size(); index++) {
      if (!removed(index)) shown.push_back(reports[index]);
    }
    return shown;
  }
  for (size_t index = 0; index < reports.size(); index++) {
    const FunctionReport& report = reports[index];
    if (removed(index) || is_free(index)) continue;
    const bool series = is_series(index);
    if (!series) {
      const uint64_t calls = report.total.count() + (totals_merged ? 0 : report.interval.count());
      if (calls == 0 && report.total_lost.total() + report.interval_lost.total() == 0) continue;
    }
    shown.push_back(report);
    if (series) shown.back().series_ended = index < life_.size() && life_[index].ended;
    // A group's own report holds what no series took: `other`, unless the
    // group has no series at all (a target without --by of its own).
    if (!series && by_of_group(index) != 0) shown.back().series.other = true;
  }
  return shown;
}

Report Aggregator::merged_report(Report::Kind kind, std::chrono::system_clock::time_point now,
                                 std::vector<FunctionReport>& reports,
                                 std::vector<RemoveState>& removed_states) {
  fill_modes(reports);
  Report report;
  report.kind = kind;
  report.run_start = run_start_;
  report.interval_start = interval_start_;
  report.time = now;
  for (auto& function : reports) {
    function.total.merge(function.interval);
    merge_split(function.total_split, function.interval_split);
    merge_self(function.total_self, function.interval_self);
    function.total_lost += function.interval_lost;
    report.ringbuf_dropped_total += function.total_lost.ringbuf;
  }
  report.functions = visible(reports, true, removed_states);
  advance_removal(removed_states);
  drop_ended_series();
  report.series_folded = folded_ + kernel_folded_;
  report.series_expired = expired_;
  report.probe_cpu_ns = probe_cpu_ns_;
  return report;
}

Report Aggregator::peek_report(std::chrono::system_clock::time_point now) {
  std::vector<FunctionReport> all = reports_;
  return merged_report(Report::Kind::kInterval, now, all, live_removed_);
}

Report Aggregator::take_report(Report::Kind kind, std::chrono::system_clock::time_point now) {
  Report report = merged_report(kind, now, reports_, removed_);
  for (auto& function : reports_) {
    function.interval.clear();
    clear_split(function.interval_split);
    if (function.interval_self) function.interval_self->clear();
    function.interval_lost = {};
    function.interval_slowest.clear();
  }
  std::fill(fn_interval_calls_.begin(), fn_interval_calls_.end(), 0);
  interval_start_ = now;
  return report;
}

void Aggregator::advance_removal(std::vector<RemoveState>& states) {
  for (auto& state : states) {
    if (state == RemoveState::kLastReport) state = RemoveState::kGone;
  }
}

std::vector<SeriesId> Aggregator::end_idle_series(std::chrono::system_clock::time_point now) {
  std::vector<SeriesId> ended;
  if (!series_.gone) return ended;
  for (const auto& [id, index] : series_index_) {
    life_.resize(std::max(life_.size(), index + 1));
    SeriesLife& life = life_[index];
    if (life.ended) continue;
    const FunctionReport& report = reports_[index];
    const uint64_t calls = report.total.count() + report.interval.count();
    if (calls != life.calls || !life.quiet_since) {
      life.calls = calls;
      life.quiet_since = now;
    }
    const uint32_t by = by_of_group(id.first);
    const auto expiry = (by & FL_BY_PID) ? series_.pid_expiry : series_.expiry;
    const bool waited = now - *life.quiet_since >= expiry;
    if (!waited || !series_.gone(id.second, by)) continue;
    life.ended = true;
    ended.push_back(id);
  }
  return ended;
}

void Aggregator::drop_ended_series() {
  for (auto it = series_index_.begin(); it != series_index_.end();) {
    const size_t index = it->second;
    if (index >= life_.size() || !life_[index].ended) {
      ++it;
      continue;
    }
    // The room (and its histograms' memory) goes to the next new series.
    life_[index] = SeriesLife{};
    series_group_[index].reset();
    free_.resize(std::max(free_.size(), index + 1), false);
    free_[index] = true;
    reports_[index].interval.clear();
    reports_[index].total.clear();
    reports_[index].interval_slowest.clear();
    reports_[index].total_slowest.clear();
    expired_++;
    it = series_index_.erase(it);
  }
}

}  // namespace funclatency
