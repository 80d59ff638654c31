// The run loop: drains the ring buffer on a timer, reads kernel totals,
// applies the auto-mode policy, hands each interval to the sinks, and stops
// on a signal, the duration, the traced process's exit or a broken sink.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collect/aggregator.h"
#include "collect/kernel_slots.h"
#include "collect/mode_policy.h"
#include "collect/slow_thresholds.h"
#include "collect/tracing_choices.h"
#include "common/error.h"
#include "model/sink.h"
#include "probe/bpf_object.h"

struct fl_slow_call;

namespace funclatency {

struct SessionOptions {
  std::chrono::milliseconds interval{0};  // 0: report only at exit
  std::optional<std::chrono::milliseconds> duration;
  std::optional<int> pid;  // stop when this process exits
  ModeChoice mode = ModeChoice::kAuto;
  ModePolicyOptions policy;
  std::chrono::milliseconds poll_period{100};
  // Sinks that also get the running totals every live_period (exporters).
  std::vector<Sink*> live_sinks;
  std::chrono::milliseconds live_period{1000};
  std::function<void(const std::string&)> verbose;  // may be empty
  // Called every late_attach_period while set: attaches functions of
  // libraries the process loaded since (already added to the aggregator) and
  // returns their ids. An error ends the run.
  std::function<Result<std::vector<uint32_t>>()> attach_late;
  std::chrono::milliseconds late_attach_period{200};
  // Readable when attach_late has work now (the exec watch's ring): the
  // session calls it at once instead of at its next period. -1: none.
  int late_attach_fd = -1;
  // SIGHUP reloads instead of stopping when set (--config): returns the ids
  // of functions attached by the reload; an error is reported by the
  // callback itself and leaves the run going.
  std::function<std::vector<uint32_t>()> reload;
  // Adds what the run knows beyond the functions (the agent's status) to
  // each report before the sinks see it; may be empty.
  std::function<void(Report&)> annotate;
  // --slowest/--slower-than (the BPF object must be loaded with slow_calls).
  SlowThresholdOptions slow;
  // Unwinds and names a slow call's user stack; empty: calls without stacks.
  std::function<std::vector<StackFrame>(const fl_slow_call&)> resolve_stack;
  // A slow call's record arrived (before it is kept or resolved): whoever
  // names stacks takes in its process now, while the process may still run.
  std::function<void(const fl_slow_call&)> slow_call_arrived;
  // Every slow call that arrived so far is resolved (none held for the next
  // interval): the state of processes that exited may go.
  std::function<void()> slow_calls_resolved;
  // The function a --slower-than line names: its symbol and binary.
  std::function<std::pair<std::string, std::string>(uint32_t fn_id)> describe_function;
  // Go code: the goid at `address` in process `tgid` (has a goroutine with a
  // call in flight ended?), raising what reading another process takes;
  // empty: collect/open_frames' read_goid as the run is.
  std::function<std::optional<uint64_t>(uint32_t tgid, uint64_t address)> read_goid;
};

enum class StopReason { kSignal, kDuration, kProcessExited, kSinkBroken };

class EventReader;
class MapReader;

class TraceSession {
 public:
  // `signal_fd` is a signalfd for the signals that end the run (blocked by
  // the caller before any thread starts). `detach` removes every probe; it
  // runs before the final drain so the last report is complete.
  TraceSession(BpfObject& object, Aggregator& aggregator, std::vector<Sink*> sinks,
               SessionOptions options, int signal_fd, std::function<void()> detach);
  Result<StopReason> run();

 private:
  using Clock = std::chrono::steady_clock;
  struct Schedule;  // when each periodic task is next due
  struct Wakeups;   // the epoll instance and the descriptors it watches

  Result<Wakeups> open_wakeups(int ring_epoll_fd) const;
  Schedule start_schedule(Clock::time_point start) const;
  Result<std::optional<StopReason>> wait(int epoll_fd, Schedule& schedule);
  Result<std::optional<StopReason>> run_due_tasks(EventReader& reader, Clock::time_point now,
                                                  Schedule& schedule, bool stopping);
  Result<StopReason> finish(EventReader& reader, StopReason reason);
  Result<void> attach_late();
  Result<void> take_functions(const std::vector<uint32_t>& added);
  Result<void> write_live(EventReader& reader);
  Result<void> collect_kernel_side();
  Result<void> count_frames_left_open();
  Result<void> count_spans_left_open(bool at_end);
  Result<void> collect_span_lost();
  static std::vector<std::optional<uint32_t>> initial_slot_owners(const BpfObject& object);
  void make_room_for(uint32_t fn_id, const std::vector<uint64_t>& calls);
  Result<void> collect_kernel_series(MapReader& reader);
  void judge_series();
  void delete_ended_kernel_series();
  void apply_policy(double seconds);
  void on_call(const CallRecord& call);
  void count_call(const CallRecord& call);
  void on_slow_call(const fl_slow_call& record);
  void keep_slow_call(std::unique_ptr<fl_slow_call> record);
  void process_slow_calls();
  void add_slow_call(const fl_slow_call& record);
  Result<void> close_interval(EventReader& reader);
  void emit(Report::Kind kind);
  bool any_sink_broken() const;

  BpfObject& object_;
  Aggregator& aggregator_;
  std::vector<Sink*> sinks_;
  SessionOptions options_;
  int signal_fd_;
  std::function<void()> detach_;
  uint32_t num_functions_;
  // --by in kernel mode: each series' last totals, by (function, part, series).
  std::map<std::tuple<uint32_t, uint32_t, SeriesKey>, KernelTotals> series_totals_;
  // The series judged ended, until their kernel entries are taken out.
  std::vector<SeriesId> ending_;
  uint32_t parts_;  // fn_stats entries per slot: stats_parts()
  KernelSlots slots_;
  std::map<uint32_t, bool> told_no_slot_;  // functions -v said had no slot
  std::vector<std::unique_ptr<KernelTotals>> last_totals_;
  std::vector<LostCounts> last_lost_;
  std::vector<uint64_t> window_calls_;
  std::vector<uint64_t> window_ringbuf_lost_;
  std::unique_ptr<ModePolicy> policy_;
  SlowThresholds thresholds_;
  std::vector<std::unique_ptr<fl_slow_call>> pending_slow_;  // drained, not yet unwound
  // --slowest/--slower-than: the interval the probes are in (slow_gen), and
  // while one closes, what its drain brought of the next one: counted once
  // the report is taken.
  uint64_t gen_ = 0;
  bool closing_ = false;
  struct HeldCall {
    CallRecord call;
    std::optional<CallSplit> split;
  };
  std::vector<HeldCall> next_calls_;
  std::vector<std::unique_ptr<fl_slow_call>> next_slow_;
  std::vector<LostCounts> last_span_lost_;  // spans: span_lost's last totals, by span index
};

}  // namespace funclatency
