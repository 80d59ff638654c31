// The OTLP sink's sender thread and its delta bookkeeping (see otlp_sink.h).
#include "output/otlp/otlp_sink.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

namespace funclatency {
namespace {

bool same_series(const FunctionReport& a, const FunctionReport& b) {
  auto labels = [](const SeriesLabels& s) {
    return std::tie(s.pid, s.comm, s.cgroup, s.container_id, s.pod_uid, s.retval, s.arg,
                    s.arg_index, s.other);
  };
  return a.symbol == b.symbol && a.binary == b.binary && a.pid == b.pid &&
         labels(a.series) == labels(b.series) && a.series.runtime == b.series.runtime &&
         a.labels == b.labels;
}

// The calls in running total `now` since `before`, its value at the previous
// export (none: every call is new). Totals only grow; if one shrank anyway,
// all of `now` is new.
LatencyHistogram calls_since(const LatencyHistogram& now, const LatencyHistogram* before) {
  if (!before) return now;
  return now.since(*before).value_or(now);
}

LostCounts lost_difference(const LostCounts& now, const LostCounts& before) {
  auto minus = [](uint64_t a, uint64_t b) { return a >= b ? a - b : a; };
  return {minus(now.unreturned, before.unreturned), minus(now.depth, before.depth),
          minus(now.ringbuf, before.ringbuf), minus(now.split_unknown, before.split_unknown),
          minus(now.slow_dropped, before.slow_dropped)};
}

// --slowest: the slowest calls among those that returned after `since` (the
// previous export), as exemplars of the calls since then: from the run's
// slowest and the report's interval's, slowest first, as many as the report
// keeps. A slow call of an interval that was never exported and is not among
// the run's slowest is not seen; exemplars are samples, so that is fine.
std::vector<SlowCall> slowest_since(const FunctionReport& function,
                                    std::chrono::system_clock::time_point since) {
  std::vector<SlowCall> calls;
  auto same_call = [](const SlowCall& a, const SlowCall& b) {
    return a.tid == b.tid && a.time == b.time && a.duration_ns == b.duration_ns;
  };
  for (const auto* list : {&function.total_slowest, &function.interval_slowest}) {
    for (const SlowCall& call : *list) {
      if (call.time <= since) continue;
      if (std::ranges::any_of(calls, [&](const SlowCall& c) { return same_call(c, call); })) {
        continue;
      }
      calls.push_back(call);
    }
  }
  std::ranges::stable_sort(calls, std::ranges::greater{}, &SlowCall::duration_ns);
  calls.resize(std::min(calls.size(),
                        std::max(function.total_slowest.size(), function.interval_slowest.size())));
  return calls;
}

}  // namespace

OtlpSink::OtlpSink(OtlpOptions options, ExportContext context,
                   std::unique_ptr<OtlpTransport> transport, OtlpLogFunction log)
    : options_(std::move(options)),
      context_(std::move(context)),
      transport_(std::move(transport)),
      log_(std::move(log)) {
  sender_ = std::jthread([this] { run(); });
}

OtlpSink::~OtlpSink() {
  close();
}

void OtlpSink::write(const Report& report) {
  // Every report carries running totals, so the latest one supersedes
  // whatever was not yet exported, whatever its kind or cadence (interval
  // reports, live snapshots between them, the final total).
  // A series the superseded report showed for the last time (it ended) is
  // carried over, so its last totals are exported once.
  Report next = report;
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  if (pending_) {
    for (const FunctionReport& function : pending_->functions) {
      if (function.series_ended &&
          std::ranges::none_of(next.functions,
                               [&](const FunctionReport& f) { return same_series(f, function); })) {
        next.functions.push_back(function);
      }
    }
  }
  pending_ = std::move(next);
}

void OtlpSink::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    stopping_ = true;
    close_deadline_ = Clock::now() + options_.timeout;
  }
  wake_.notify_all();
  std::unique_lock lock(mutex_);
  if (!wake_.wait_until(lock, close_deadline_, [this] { return sender_done_; })) {
    // A send still in progress at the deadline is cut short, so close()
    // returns within the export timeout however slow the collector is.
    lock.unlock();
    transport_->abort();
    lock.lock();
    wake_.wait(lock, [this] { return sender_done_; });
  }
  // The sender is done with everything but its last notify; the jthread
  // joins it when the sink goes.
}

OtlpSinkStats OtlpSink::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void OtlpSink::run() {
  // Found by name in /proc/PID/task: it reads the collector's answers, and
  // has no capability (it starts before the privileges are dropped, and the
  // drop covers every thread; tests/e2e/test_agent_metrics.py checks).
  pthread_setname_np(pthread_self(), "fl-otlp");
  auto next_export = Clock::now() + options_.export_interval;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto wake_at = next_export;
    if (!queue_.empty()) wake_at = std::min(wake_at, queue_.front().next_attempt);
    wake_.wait_until(lock, wake_at, [&] { return stopping_; });
    if (stopping_) break;
    auto now = Clock::now();
    lock.unlock();
    if (now >= next_export) {
      next_export = now + options_.export_interval;
      enqueue_pending();
    }
    if (!queue_.empty() && now >= queue_.front().next_attempt) {
      attempt_head(now + options_.timeout);
    }
    lock.lock();
  }
  auto deadline = close_deadline_;
  lock.unlock();

  // Final flush: what write() recorded last, and anything still queued.
  enqueue_pending();
  while (!queue_.empty()) {
    auto now = Clock::now();
    if (now >= deadline || queue_.front().next_attempt >= deadline) break;
    if (queue_.front().next_attempt > now)
      std::this_thread::sleep_until(queue_.front().next_attempt);
    attempt_head(deadline);
  }
  if (!queue_.empty()) {
    auto left = queue_.size();
    queue_.clear();
    if (log_) {
      log_("OTLP: " + std::to_string(left) + " export request(s) to " + options_.endpoint +
           " could not be delivered before the export timeout");
    }
    lock.lock();
    stats_.dropped_requests += left;
    lock.unlock();
  }
  lock.lock();
  sender_done_ = true;
  lock.unlock();
  wake_.notify_all();
}

void OtlpSink::enqueue_pending() {
  std::optional<Report> report;
  ExporterHealth health;
  {
    std::lock_guard lock(mutex_);
    report.swap(pending_);
    health = {stats_.failed_attempts, stats_.dropped_requests};
  }
  if (!report) return;
  if (options_.temporality == OtlpTemporality::kDelta) to_delta(*report);
  ExporterHealth reported = health;
  if (options_.temporality == OtlpTemporality::kDelta) {
    reported.failed_exports -= health_reported_.failed_exports;
    reported.dropped_requests -= health_reported_.dropped_requests;
  }
  health_reported_ = health;
  QueuedRequest queued{build_export_request(*report, options_, context_, reported), 0,
                       Clock::now()};
  if (queue_.size() >= std::max<std::size_t>(1, options_.queue_capacity)) {
    drop_head("the send queue is full (collector slow or down)");
  }
  queue_.push_back(std::move(queued));
  std::lock_guard lock(mutex_);
  stats_.requests_built++;
}

void OtlpSink::to_delta(Report& report) {
  // The first export covers the run so far; each later one, the calls since
  // the previous export's report.
  auto since = last_exported_time_.value_or(report.run_start);
  auto aggregator_interval_start = report.interval_start;
  report.interval_start = since;
  for (auto& function : report.functions) {
    auto found = std::ranges::find_if(
        exported_totals_, [&](const FunctionReport& f) { return same_series(f, function); });
    const FunctionReport* previous = found != exported_totals_.end() ? &*found : nullptr;
    LatencyHistogram delta = calls_since(function.total, previous ? &previous->total : nullptr);
    function.interval_lost =
        previous ? lost_difference(function.total_lost, previous->total_lost) : function.total_lost;
    // When the report's own interval began at or after the previous export
    // and holds as many calls, it holds exactly these calls, and it also
    // knows their min and max; so does its split.
    if (aggregator_interval_start >= since && function.interval.count() == delta.count()) continue;
    function.interval = std::move(delta);
    function.interval_slowest = slowest_since(function, since);
    if (function.total_self) {
      function.interval_self =
          calls_since(*function.total_self,
                      previous && previous->total_self ? &*previous->total_self : nullptr);
    }
    if (!function.total_split) continue;
    const CpuSplit* split_before =
        previous && previous->total_split ? &*previous->total_split : nullptr;
    auto part_since = [&](LatencyHistogram CpuSplit::*part) {
      return calls_since(*function.total_split.*part,
                         split_before ? &(split_before->*part) : nullptr);
    };
    function.interval_split =
        CpuSplit{part_since(&CpuSplit::oncpu), part_since(&CpuSplit::runnable),
                 part_since(&CpuSplit::blocked)};
  }
  exported_totals_ = report.functions;  // their totals are untouched
  last_exported_time_ = report.time;
}

void OtlpSink::drop_head(const std::string& why) {
  queue_.pop_front();
  {
    std::lock_guard lock(mutex_);
    stats_.dropped_requests++;
  }
  // While the collector stays down, say it once; the count comes with the
  // recovery line and in funclatency_otlp_dropped_requests.
  bool first_in_streak = !failing_ || dropped_in_streak_ == 0;
  if (failing_) dropped_in_streak_++;
  if (log_ && first_in_streak) {
    log_("OTLP: dropped an export request to " + options_.endpoint + ": " + why);
  }
}

void OtlpSink::attempt_head(Clock::time_point deadline) {
  auto& head = queue_.front();
  deadline = std::min(deadline, Clock::now() + options_.timeout);
  ExportOutcome outcome = transport_->send(head.request, deadline);
  if (outcome.status == ExportOutcome::Status::kSuccess) {
    {
      std::lock_guard lock(mutex_);
      stats_.requests_sent++;
    }
    if (failing_ && log_) {
      log_("OTLP: export to " + options_.endpoint + " works again (" +
           std::to_string(dropped_in_streak_) + " request(s) dropped meanwhile)");
    }
    failing_ = false;
    dropped_in_streak_ = 0;
    if (outcome.partial_success() && log_) {
      log_("OTLP: the collector rejected " + std::to_string(outcome.rejected_data_points) +
           " data point(s): " + outcome.partial_success_message);
    }
    queue_.pop_front();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    stats_.failed_attempts++;
  }
  if (outcome.status == ExportOutcome::Status::kPermanent) {
    drop_head("rejected, not retried: " + outcome.detail);
    // Said once: later refusals join the streak the recovery line counts.
    if (!failing_) {
      failing_ = true;
      dropped_in_streak_ = 1;
    }
    return;
  }
  head.failed_attempts++;
  if (head.failed_attempts >= options_.retry.max_attempts) {
    drop_head("no success after " + std::to_string(head.failed_attempts) +
              " attempts, last: " + outcome.detail);
    return;
  }
  if (!failing_ && log_) {
    log_("OTLP: export to " + options_.endpoint + " failed (" + outcome.detail + "); retrying");
  }
  failing_ = true;
  double random_unit = std::uniform_real_distribution<double>(0.0, 1.0)(jitter_);
  head.next_attempt = Clock::now() + retry_delay(options_.retry, head.failed_attempts, random_unit,
                                                 outcome.retry_after);
}

}  // namespace funclatency
