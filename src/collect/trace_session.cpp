#include "collect/trace_session.h"

#include <bpf/bpf.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <set>

#include "collect/event_reader.h"
#include "collect/map_reader.h"
#include "collect/open_frames.h"
#include "collect/span_open.h"
#include "common/unique_fd.h"

namespace funclatency {

namespace {

enum EpollTag : uint64_t { kSignalTag = 1, kProcessTag = 2, kRingTag = 3, kLateAttachTag = 4 };

Result<void> watch(int epoll_fd, int fd, EpollTag tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) < 0) {
    return runtime_error("watch a file descriptor with epoll", errno);
  }
  return {};
}

constexpr std::chrono::milliseconds kPolicyPeriod{250};
// Go code: how often the stacks of goroutines that ended inside a call are
// looked for when no interval does it (their room is the bound's).
constexpr std::chrono::seconds kFrameSweepPeriod{1};

}  // namespace

struct TraceSession::Schedule {
  Clock::time_point next_policy, last_policy, next_live, next_late_attach, next_frame_sweep;
  bool reload_asked = false;
  std::optional<Clock::time_point> next_interval, deadline;
};

struct TraceSession::Wakeups {
  UniqueFd epoll;
  UniqueFd pidfd;  // the traced process's, with a pid
  // The traced process was already gone (reaped) when the watch opened: it
  // existed when the run started (the PID was checked then), so it exited
  // while the probes went in, and the run ends as at its exit.
  bool process_gone = false;
};

TraceSession::TraceSession(BpfObject& object, Aggregator& aggregator, std::vector<Sink*> sinks,
                           SessionOptions options, int signal_fd, std::function<void()> detach)
    : object_(object),
      aggregator_(aggregator),
      sinks_(std::move(sinks)),
      options_(std::move(options)),
      signal_fd_(signal_fd),
      detach_(std::move(detach)),
      num_functions_(object.num_functions()),
      parts_(stats_parts(object.options().cpu_split, object.options().self_time)),
      slots_(object.kernel_slots(), initial_slot_owners(object), std::chrono::seconds(1)),
      last_totals_(static_cast<size_t>(object.kernel_slots()) * parts_),
      last_lost_(num_functions_),
      window_calls_(num_functions_, 0),
      window_ringbuf_lost_(num_functions_, 0),
      thresholds_(num_functions_, options_.slow) {
  if (options_.mode == ModeChoice::kAuto) {
    policy_ = std::make_unique<ModePolicy>(num_functions_, options_.policy);
  }
  if (options_.mode == ModeChoice::kKernel) {
    // Functions beyond the kernel slots stay in events mode.
    for (uint32_t fn = 0; fn < num_functions_; fn++) {
      if (object.slot_of(fn) != FL_NO_SLOT) aggregator_.set_mode(fn, AggregationMode::kKernel);
    }
  }
}

std::vector<std::optional<uint32_t>> TraceSession::initial_slot_owners(const BpfObject& object) {
  std::vector<std::optional<uint32_t>> owners(object.kernel_slots());
  for (uint32_t fn = 0; fn < object.num_functions(); fn++) {
    if (uint32_t slot = object.slot_of(fn); slot != FL_NO_SLOT) owners[slot] = fn;
  }
  return owners;
}

// --by in kernel mode: the series' totals, and the series of processes that
// exited, reported for the last time: their totals go.
Result<void> TraceSession::collect_kernel_series(MapReader& reader) {
  if (!object_.options().series_by) return {};
  aggregator_.set_kernel_series_folded(object_.series_folded());
  return reader.read_series(
      object_.series_stats_fd(), [&](const fl_series_key& key, const KernelTotals& totals) {
        SeriesKey series{key.tgid, key.cgroup_id, std::string(key.comm, strnlen(key.comm, 16)),
                         key.value};
        auto& last = series_totals_[{key.fn_id, key.part, series}];
        if (key.part == FL_PART_WALL && key.fn_id < num_functions_) {
          window_calls_[key.fn_id] += totals.count - last.count;
        }
        aggregator_.on_kernel_series_totals(key.fn_id, series, static_cast<CallPart>(key.part),
                                            last, totals);
        last = totals;
      });
}

// --by: the series whose processes are gone and that had no call for the
// expiry end now: judged before the drain and the read that bring their
// last calls, so the report they end in has all of them.
void TraceSession::judge_series() {
  ending_ = aggregator_.end_idle_series(std::chrono::system_clock::now());
}

// Kernel mode: the ended series' entries leave series_stats, room for new
// series. Each is taken out with its value at that instant: the calls it
// got since the last read are counted in the series' last report. A probe
// of a live process (a value series) that calls again makes a new entry,
// a new series from 0.
void TraceSession::delete_ended_kernel_series() {
  if (ending_.empty()) return;
  std::set<SeriesId> ended(ending_.begin(), ending_.end());
  ending_.clear();
  if (!object_.options().series_by) return;
  for (auto it = series_totals_.begin(); it != series_totals_.end();) {
    const auto& [fn_id, part, key] = it->first;
    auto id = aggregator_.series_of(fn_id, key);
    if (!id || !ended.contains(*id)) {
      ++it;
      continue;
    }
    fl_series_key bpf_key{};
    bpf_key.fn_id = fn_id;
    bpf_key.part = part;
    bpf_key.tgid = key.tgid;
    bpf_key.cgroup_id = key.cgroup_id;
    bpf_key.value = key.value;
    std::memcpy(bpf_key.comm, key.comm.data(), std::min(key.comm.size(), sizeof(bpf_key.comm)));
    if (auto last_totals = take_series_entry(object_.series_stats_fd(), bpf_key)) {
      if (part == FL_PART_WALL && fn_id < num_functions_) {
        window_calls_[fn_id] += last_totals->count - it->second.count;
      }
      aggregator_.on_kernel_series_totals(fn_id, key, static_cast<CallPart>(part), it->second,
                                          *last_totals);
    }
    it = series_totals_.erase(it);
  }
}

// Go code: the frames goroutines left open when they ended inside a call
// (the last call a panic abandoned) or their process exited never return;
// counted lost, as the probes count a frame a later call shows abandoned,
// and their room in the map freed. A goroutine still running keeps its
// frames: calls in flight.
Result<void> TraceSession::count_frames_left_open() {
  if (!object_.options().go_programs) return {};
  auto open = take_open_go_frames_of_ended(
      object_.go_stacks_fd(), [](uint32_t tgid) { return process_gone(tgid); },
      options_.read_goid ? options_.read_goid : read_goid);
  if (!open) return std::unexpected(open.error());
  for (const auto& [fn_id, frames] : *open) {
    aggregator_.on_lost(fn_id, LostCounts{.unreturned = frames});
  }
  return {};
}

// Spans still open in processes that exited (every interval), or at all
// (the run's end): their ends can no longer come; counted lost.
Result<void> TraceSession::count_spans_left_open(bool at_end) {
  if (object_.options().spans.empty()) return {};
  auto open = take_open_spans(object_.open_spans_fd(), [at_end](uint32_t tgid) {
    return at_end || (tgid != 0 && process_gone(tgid));
  });
  if (!open) return std::unexpected(open.error());
  for (const auto& [fn_id, spans] : *open) {
    aggregator_.on_lost(fn_id, LostCounts{.span_open = spans});
  }
  return {};
}

// Spans: the probes' counts of spans lost (reused, full) and of ends
// without a start, cumulative per CPU; the growth since the last read.
Result<void> TraceSession::collect_span_lost() {
  const auto& spans = object_.options().spans;
  if (spans.empty()) return {};
  auto lost = read_span_lost(object_.span_lost_fd(), static_cast<uint32_t>(spans.size()));
  if (!lost) return std::unexpected(lost.error());
  last_span_lost_.resize(spans.size());
  for (size_t index = 0; index < spans.size(); index++) {
    const LostCounts& now = (*lost)[index];
    LostCounts& last = last_span_lost_[index];
    LostCounts delta{.span_reused = now.span_reused - last.span_reused,
                     .span_full = now.span_full - last.span_full,
                     .span_unstarted = now.span_unstarted - last.span_unstarted};
    if (delta.total() || delta.span_unstarted) aggregator_.on_lost(spans[index].fn_id, delta);
    last = now;
  }
  return {};
}

Result<void> TraceSession::collect_kernel_side() {
  MapReader reader(object_.fn_stats_fd(), object_.fn_lost_fd(), num_functions_);
  auto lost = reader.read_all_lost();
  if (!lost) return std::unexpected(lost.error());
  for (uint32_t fn = 0; fn < num_functions_; fn++) {
    const LostCounts& now = (*lost)[fn];
    LostCounts delta{now.unreturned - last_lost_[fn].unreturned, now.depth - last_lost_[fn].depth,
                     now.ringbuf - last_lost_[fn].ringbuf,
                     now.split_unknown - last_lost_[fn].split_unknown,
                     now.slow_dropped - last_lost_[fn].slow_dropped};
    window_ringbuf_lost_[fn] += delta.ringbuf;
    if (delta.total() || delta.split_unknown || delta.slow_dropped) aggregator_.on_lost(fn, delta);
    last_lost_[fn] = now;
  }
  if (auto spans = collect_span_lost(); !spans) return spans;
  if (auto series = collect_kernel_series(reader); !series) return series;
  // The slots held (or cooling), each the calls of its owner; with
  // --cpu-split or --self a slot's parts follow it, one stride (the number
  // of slots) apart.
  const uint32_t stride = slots_.size();
  std::vector<bool> wanted(last_totals_.size());
  for (size_t key = 0; key < wanted.size(); key++) {
    wanted[key] = slots_.owner(static_cast<uint32_t>(key % stride)).has_value();
  }
  auto read = reader.read_totals(wanted, [&](uint32_t key, const KernelTotals& totals) {
    const auto owner = slots_.owner(key % stride);
    const auto part = static_cast<CallPart>(
        part_at_entry(key / stride, object_.options().cpu_split, object_.options().self_time));
    auto& last = last_totals_[key];
    if (!last) last = std::make_unique<KernelTotals>();
    if (owner && *owner < num_functions_) {
      if (part == CallPart::kWall) window_calls_[*owner] += totals.count - last->count;
      aggregator_.on_kernel_totals(*owner, *last, totals, part);
    }
    *last = totals;
  });
  if (!read) return read;
  // Read just now: slots that cooled long enough hold no more of their
  // owner's calls and go to whoever needs one next.
  slots_.reclaim(Clock::now());
  return {};
}

// The slots go to the hottest functions: a hot function with no slot free
// sends the coldest holder (clearly colder: 10% of hysteresis against
// flapping) back to events mode; its slot cools, then the next ask gets it.
void TraceSession::make_room_for(uint32_t fn_id, const std::vector<uint64_t>& calls) {
  if (slots_.any_cooling()) return;  // one slot changes hands at a time
  std::optional<uint32_t> coldest;
  for (uint32_t slot = 0; slot < slots_.size(); slot++) {
    auto owner = slots_.owner(slot);
    if (!owner || !slots_.slot_of(*owner) || *owner >= calls.size()) continue;  // cooling
    if (!coldest || calls[*owner] < calls[*coldest]) coldest = owner;
  }
  if (!coldest || fn_id >= calls.size() || calls[*coldest] * 11 / 10 >= calls[fn_id]) return;
  const uint32_t slot = *slots_.slot_of(*coldest);
  if (!object_.set_mode(*coldest, FL_MODE_EVENTS, slot)) return;
  slots_.release(*coldest, Clock::now());
  policy_->refused(ModeSwitch{*coldest, true, {}});
  aggregator_.set_mode(*coldest, AggregationMode::kEvents);
  if (options_.verbose) {
    options_.verbose(
        fmt::format("function {} -> events mode (its kernel slot goes to the hotter "
                    "function {})",
                    *coldest, fn_id));
  }
}

void TraceSession::apply_policy(double seconds) {
  if (!policy_) return;
  auto switches = policy_->observe(window_calls_, window_ringbuf_lost_, seconds);
  const std::vector<uint64_t> calls = window_calls_;
  // The hottest ask first: a free slot goes to the hottest function that wants one.
  std::stable_sort(switches.begin(), switches.end(), [&calls](const auto& a, const auto& b) {
    auto rate = [&calls](uint32_t fn) { return fn < calls.size() ? calls[fn] : 0; };
    return rate(a.fn_id) > rate(b.fn_id);
  });
  std::fill(window_calls_.begin(), window_calls_.end(), 0);
  std::fill(window_ringbuf_lost_.begin(), window_ringbuf_lost_.end(), 0);
  for (const auto& change : switches) {
    uint32_t mode = change.to_kernel ? FL_MODE_KERNEL : FL_MODE_EVENTS;
    // Kernel mode takes a free slot; leaving it lets the slot cool. With
    // none free the function stays in events mode for now.
    std::optional<uint32_t> slot = slots_.slot_of(change.fn_id);
    if (change.to_kernel && !slot) slot = slots_.take(change.fn_id);
    if (change.to_kernel && !slot) {
      make_room_for(change.fn_id, calls);
      policy_->refused(change);
      if (options_.verbose && !told_no_slot_[change.fn_id]) {
        options_.verbose(
            fmt::format("function {} stays in events mode: all {} kernel slots are "
                        "in use (--kernel-slots)",
                        change.fn_id, slots_.size()));
      }
      told_no_slot_[change.fn_id] = true;
      continue;
    }
    if (auto set = object_.set_mode(change.fn_id, mode, slot.value_or(FL_NO_SLOT)); !set) {
      if (options_.verbose) options_.verbose(set.error().message());
      continue;
    }
    if (!change.to_kernel) slots_.release(change.fn_id, Clock::now());
    aggregator_.set_mode(change.fn_id,
                         change.to_kernel ? AggregationMode::kKernel : AggregationMode::kEvents);
    if (options_.verbose) {
      options_.verbose(fmt::format("function {} -> {} mode ({})", change.fn_id,
                                   change.to_kernel ? "kernel" : "events", change.reason));
    }
  }
}

// A completed call as the ring delivers it. While an interval closes, a
// call the probes already counted in the next one waits for that one.
void TraceSession::on_call(const CallRecord& call) {
  if (closing_ && call.odd_gen == ((gen_ & 1) != 0)) {
    HeldCall held{call, std::nullopt};
    if (call.split) held.split = *call.split;
    held.call.split = nullptr;
    next_calls_.push_back(std::move(held));
    return;
  }
  count_call(call);
}

void TraceSession::count_call(const CallRecord& call) {
  aggregator_.on_call(call);
  if (call.fn_id < num_functions_) window_calls_[call.fn_id]++;
}

// A call the probes sent with its stack, as the ring delivers it (kept in
// the interval its probe saw, as its event is). Unwinding waits for the end
// of the drain, and only for those still among the slowest then.
void TraceSession::on_slow_call(const fl_slow_call& record) {
  if (options_.slow_call_arrived) options_.slow_call_arrived(record);
  auto copy = std::make_unique<fl_slow_call>();
  std::memcpy(copy.get(), &record,
              offsetof(fl_slow_call, stack) + std::min<size_t>(record.stack_bytes, FL_STACK_BYTES));
  if (closing_ && (record.gen & 1) == (gen_ & 1)) {
    next_slow_.push_back(std::move(copy));
    return;
  }
  keep_slow_call(std::move(copy));
}

void TraceSession::keep_slow_call(std::unique_ptr<fl_slow_call> record) {
  thresholds_.observe(record->fn_id, record->duration_ns);
  pending_slow_.push_back(std::move(record));
}

// The drained slow calls still among the slowest (or over --slower-than):
// unwound, added to their reports, shown.
void TraceSession::process_slow_calls() {
  for (const auto& record : pending_slow_) {
    const auto& slower_than = thresholds_.options_of(record->fn_id).slower_than_ns;
    const bool shown = slower_than && record->duration_ns >= *slower_than;
    if (shown || record->duration_ns >= thresholds_.threshold(record->fn_id)) {
      add_slow_call(*record);
    }
  }
  pending_slow_.clear();
}

void TraceSession::add_slow_call(const fl_slow_call& record) {
  SlowCall call;
  call.duration_ns = record.duration_ns;
  if (record.flags & FL_EVENT_SPLIT) {
    call.runnable_ns = record.runnable_ns;
    call.blocked_ns = record.blocked_ns;
  }
  call.pid = static_cast<int>(record.tgid);
  call.tid = static_cast<int>(record.tid);
  call.thread.assign(record.comm, strnlen(record.comm, sizeof(record.comm)));
  // The probe read CLOCK_MONOTONIC, which steady_clock is on Linux.
  const auto ago = std::chrono::nanoseconds(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count() -
      static_cast<int64_t>(record.end_ns));
  call.time = std::chrono::system_clock::now() -
              std::chrono::duration_cast<std::chrono::system_clock::duration>(ago);
  if (options_.resolve_stack) call.stack = options_.resolve_stack(record);
  const SeriesKey caller{record.tgid, record.cgroup_id, call.thread, record.value};
  aggregator_.on_slow_call(record.fn_id, caller, call);
  const auto& slower_than = thresholds_.options_of(record.fn_id).slower_than_ns;
  if (!slower_than || record.duration_ns < *slower_than) return;
  SlowCallReport shown{.threshold_ns = *slower_than, .call = std::move(call)};
  if (options_.describe_function) {
    std::tie(shown.symbol, shown.binary) = options_.describe_function(record.fn_id);
  }
  for (Sink* sink : sinks_) sink->write_slow_call(shown);
}

// --slowest/--slower-than: an interval's slowest call is the longest it
// counts only if the probes judged every call by the floor of the interval
// that counts it. So the probes move to the next interval first and tag what
// they send with it; the drain then brings the rest of this one, and what it
// brings of the next waits (emit counts it after the report).
Result<void> TraceSession::close_interval(EventReader& reader) {
  if (!object_.slow_calls()) return {};
  gen_ = object_.start_slow_interval();
  closing_ = true;
  auto drained = reader.drain();
  closing_ = false;
  if (!drained) return std::unexpected(drained.error());
  process_slow_calls();
  return {};
}

void TraceSession::emit(Report::Kind kind) {
  Report report =
      aggregator_.take_report(Report::Kind::kInterval, std::chrono::system_clock::now());
  thresholds_.start_interval();
  for (auto& held : next_calls_) {
    if (held.split) held.call.split = &*held.split;
    count_call(held.call);
  }
  next_calls_.clear();
  for (auto& record : next_slow_) keep_slow_call(std::move(record));
  next_slow_.clear();
  if (options_.annotate) options_.annotate(report);
  for (Sink* sink : sinks_) sink->write(report);
  if (kind == Report::Kind::kTotal) {
    report.kind = Report::Kind::kTotal;
    report.kernel_memory_bytes = object_.locked_memory();
    for (Sink* sink : sinks_) sink->write(report);
  }
}

bool TraceSession::any_sink_broken() const {
  return std::any_of(sinks_.begin(), sinks_.end(), [](Sink* s) { return s->broken(); });
}

Result<TraceSession::Wakeups> TraceSession::open_wakeups(int ring_epoll_fd) const {
  Wakeups wakeups{UniqueFd(epoll_create1(EPOLL_CLOEXEC)), UniqueFd()};
  if (!wakeups.epoll) return runtime_error("create an epoll instance", errno);
  if (auto ok = watch(wakeups.epoll.get(), signal_fd_, kSignalTag); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = watch(wakeups.epoll.get(), ring_epoll_fd, kRingTag); !ok) {
    return std::unexpected(ok.error());
  }
  if (options_.late_attach_fd >= 0) {
    if (auto ok = watch(wakeups.epoll.get(), options_.late_attach_fd, kLateAttachTag); !ok) {
      return std::unexpected(ok.error());
    }
  }
  if (!options_.pid) return wakeups;
  wakeups.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, *options_.pid, 0)));
  if (!wakeups.pidfd && errno == ESRCH) {
    wakeups.process_gone = true;
    return wakeups;
  }
  if (!wakeups.pidfd) {
    return bad_input(fmt::format("watch process {}", *options_.pid), "is the PID right?", errno);
  }
  if (auto ok = watch(wakeups.epoll.get(), wakeups.pidfd.get(), kProcessTag); !ok) {
    return std::unexpected(ok.error());
  }
  return wakeups;
}

TraceSession::Schedule TraceSession::start_schedule(Clock::time_point start) const {
  Schedule schedule{.next_policy = start + kPolicyPeriod,
                    .last_policy = start,
                    .next_live = start + options_.live_period,
                    .next_late_attach = start,
                    .next_frame_sweep = start + kFrameSweepPeriod};
  if (options_.interval.count() > 0) schedule.next_interval = start + options_.interval;
  if (options_.duration) schedule.deadline = start + *options_.duration;
  return schedule;
}

// Sleeps until a descriptor is ready or a task is due. A signal or the
// traced process's exit is a reason to stop.
Result<std::optional<StopReason>> TraceSession::wait(int epoll_fd, Schedule& schedule) {
  auto now = Clock::now();
  auto wake = now + options_.poll_period;
  if (!options_.live_sinks.empty()) wake = std::min(wake, schedule.next_live);
  if (schedule.next_interval) wake = std::min(wake, *schedule.next_interval);
  if (schedule.deadline) wake = std::min(wake, *schedule.deadline);
  auto timeout_ms =
      std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration{0}));
  epoll_event events[4];
  int ready = epoll_wait(epoll_fd, events, 4, static_cast<int>(timeout_ms.count()));
  if (ready < 0 && errno != EINTR) return runtime_error("wait for events", errno);
  std::optional<StopReason> stop;
  for (int i = 0; i < std::max(ready, 0); i++) {
    if (events[i].data.u64 == kSignalTag) {
      signalfd_siginfo info{};
      const bool read_one =
          ::read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info));
      if (read_one && info.ssi_signo == SIGHUP && options_.reload) {
        schedule.reload_asked = true;
        continue;
      }
      if (read_one && options_.verbose) {
        options_.verbose(fmt::format("signal {}: stopping", info.ssi_signo));
      }
      stop = StopReason::kSignal;
    } else if (events[i].data.u64 == kLateAttachTag) {
      schedule.next_late_attach = now;
    } else if (events[i].data.u64 == kProcessTag) {
      if (options_.verbose) options_.verbose(fmt::format("process {} exited", *options_.pid));
      stop = StopReason::kProcessExited;
    }
  }
  return stop;
}

// The periodic tasks due at `now`; once the run is `stopping`, only the
// policy's. Returns a reason to stop when the duration is over or a sink broke.
Result<std::optional<StopReason>> TraceSession::run_due_tasks(EventReader& reader,
                                                              Clock::time_point now,
                                                              Schedule& schedule, bool stopping) {
  if (!stopping && schedule.reload_asked) {
    schedule.reload_asked = false;
    if (auto ok = take_functions(options_.reload()); !ok) return std::unexpected(ok.error());
  }
  if (!stopping && options_.attach_late && now >= schedule.next_late_attach) {
    if (auto ok = attach_late(); !ok) return std::unexpected(ok.error());
    schedule.next_late_attach = now + options_.late_attach_period;
  }
  if (policy_ && now >= schedule.next_policy) {
    if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
    apply_policy(std::chrono::duration<double>(now - schedule.last_policy).count());
    schedule.last_policy = now;
    schedule.next_policy = now + kPolicyPeriod;
  }
  if (stopping) return std::optional<StopReason>();
  if (!schedule.next_interval && now >= schedule.next_frame_sweep) {
    if (auto ok = count_frames_left_open(); !ok) return std::unexpected(ok.error());
    schedule.next_frame_sweep = now + kFrameSweepPeriod;
  }
  if (!options_.live_sinks.empty() && now >= schedule.next_live) {
    if (auto ok = write_live(reader); !ok) return std::unexpected(ok.error());
    schedule.next_live = now + options_.live_period;
  }
  if (schedule.next_interval && now >= *schedule.next_interval) {
    judge_series();
    if (!object_.slow_calls()) {  // with slow calls, closing the interval drains
      if (auto drained = reader.drain(); !drained) return std::unexpected(drained.error());
    }
    if (auto ok = close_interval(reader); !ok) return std::unexpected(ok.error());
    if (auto ok = count_frames_left_open(); !ok) return std::unexpected(ok.error());
    if (auto ok = count_spans_left_open(false); !ok) return std::unexpected(ok.error());
    if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
    delete_ended_kernel_series();
    emit(Report::Kind::kInterval);
    *schedule.next_interval += options_.interval;
    if (*schedule.next_interval <= now) schedule.next_interval = now + options_.interval;
  }
  if (schedule.deadline && now >= *schedule.deadline) return StopReason::kDuration;
  if (any_sink_broken()) return StopReason::kSinkBroken;
  return std::optional<StopReason>();
}

Result<void> TraceSession::attach_late() {
  auto added = options_.attach_late();
  if (!added) return std::unexpected(added.error());
  return take_functions(*added);
}

// Functions attached while running: with --mode kernel, each gets a slot.
Result<void> TraceSession::take_functions(const std::vector<uint32_t>& added) {
  // A --config target's own slow calls (its functions were set up with them).
  for (uint32_t fn : added)
    thresholds_.set_function(fn, slow_options_of(object_.slow_calls_of(fn)));
  if (options_.mode != ModeChoice::kKernel) return {};
  for (uint32_t fn : added) {
    if (fn >= num_functions_) continue;
    auto slot = slots_.take(fn);
    if (!slot) continue;  // no slot left: events mode
    if (auto set = object_.set_mode(fn, FL_MODE_KERNEL, *slot); !set) return set;
    aggregator_.set_mode(fn, AggregationMode::kKernel);
  }
  return {};
}

// Without -i, the exporters' snapshots are the reports series end in.
Result<void> TraceSession::write_live(EventReader& reader) {
  if (options_.interval.count() == 0) {
    judge_series();
    if (auto drained = reader.drain(); !drained) return std::unexpected(drained.error());
  }
  if (auto ok = count_spans_left_open(false); !ok) return ok;
  if (auto ok = collect_kernel_side(); !ok) return ok;
  delete_ended_kernel_series();
  Report live = aggregator_.peek_report(std::chrono::system_clock::now());
  if (options_.annotate) options_.annotate(live);
  for (Sink* sink : options_.live_sinks) sink->write(live);
  return {};
}

Result<StopReason> TraceSession::finish(EventReader& reader, StopReason reason) {
  // Detach first so no call completes after the final read.
  if (detach_) detach_();
  // Everything the probes recorded; with slow calls, drained as an interval
  // closes (one drain either way).
  if (object_.slow_calls()) {
    if (auto ok = close_interval(reader); !ok) return std::unexpected(ok.error());
  } else if (auto drained = reader.drain(); !drained) {
    return std::unexpected(drained.error());
  }
  if (auto ok = count_frames_left_open(); !ok) return std::unexpected(ok.error());
  if (auto ok = count_spans_left_open(true); !ok) return std::unexpected(ok.error());
  if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
  if (!any_sink_broken()) emit(Report::Kind::kTotal);
  for (Sink* sink : sinks_) sink->close();
  return reason;
}

Result<StopReason> TraceSession::run() {
  auto reader =
      EventReader::create(object_.events_fd(), [this](const CallRecord& call) { on_call(call); });
  if (!reader) return std::unexpected(reader.error());
  if (object_.slow_calls()) {
    auto added = (*reader)->add_slow_calls(
        object_.slow_calls_fd(), [this](const fl_slow_call& record) { on_slow_call(record); });
    if (!added) return std::unexpected(added.error());
  }
  auto wakeups = open_wakeups((*reader)->epoll_fd());
  if (!wakeups) return std::unexpected(wakeups.error());

  Schedule schedule = start_schedule(Clock::now());
  std::optional<StopReason> stop;
  if (wakeups->process_gone) {
    if (options_.verbose) options_.verbose(fmt::format("process {} exited", *options_.pid));
    stop = StopReason::kProcessExited;
  }
  while (!stop) {
    auto woken = wait(wakeups->epoll.get(), schedule);
    if (!woken) return std::unexpected(woken.error());
    stop = *woken;
    if (auto drained = (*reader)->drain(); !drained) return std::unexpected(drained.error());
    process_slow_calls();
    if (options_.slow_calls_resolved && next_slow_.empty()) options_.slow_calls_resolved();
    auto due = run_due_tasks(**reader, Clock::now(), schedule, stop.has_value());
    if (!due) return std::unexpected(due.error());
    if (!stop) stop = *due;
  }
  return finish(**reader, *stop);
}

}  // namespace funclatency
