// What the collector hands the sinks at the end of each interval and at exit.
// Plain values: a sink may keep copies, nothing points back into the collector.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common/aggregation_mode.h"
#include "histogram/latency_histogram.h"

namespace funclatency {

struct LostCounts {
  uint64_t unreturned = 0;  // left by exception, longjmp, or the return probe limit
  uint64_t depth = 0;       // nested deeper than the shadow stack holds
  uint64_t ringbuf = 0;     // completed, but the ring buffer was full
  // --cpu-split: counted calls whose split is unknown (a context switch did
  // not reach the sched_switch program); not lost, so not in total().
  uint64_t split_unknown = 0;
  // --slowest/--slower-than: calls over the threshold whose record (and
  // stack) did not fit the ring buffer; counted calls, so not in total().
  uint64_t slow_dropped = 0;
  // Spans (model/span.h): a start whose key started again before its end, a
  // start the open-span map had no room for, a span still open at the end
  // of the run (or when its process exited).
  uint64_t span_reused = 0;
  uint64_t span_full = 0;
  uint64_t span_open = 0;
  // Spans: ends whose key no start had (started before tracing, or its start
  // was lost above): not spans, so not in total().
  uint64_t span_unstarted = 0;
  uint64_t total() const {
    return unreturned + depth + ringbuf + span_reused + span_full + span_open;
  }
  LostCounts& operator+=(const LostCounts& o) {
    unreturned += o.unreturned;
    depth += o.depth;
    ringbuf += o.ringbuf;
    split_unknown += o.split_unknown;
    slow_dropped += o.slow_dropped;
    span_reused += o.span_reused;
    span_full += o.span_full;
    span_open += o.span_open;
    span_unstarted += o.span_unstarted;
    return *this;
  }
};

// --cpu-split: where the calls' wall time went. Per call on-CPU + runnable +
// blocked = wall; each part is a histogram of the same type as the wall one
// (same unit and buckets), one value per call.
struct CpuSplit {
  LatencyHistogram oncpu;     // on a CPU
  LatencyHistogram runnable;  // switched out while runnable: waiting for a CPU
  LatencyHistogram blocked;   // switched out while sleeping: a lock, I/O, a sleep
};

// --by pid|comm|cgroup: which series of a function a report is. All unset
// without --by (the whole function, as before).
struct SeriesLabels {
  std::optional<int> pid;                   // --by pid: the process
  std::optional<std::string> comm;          // --by comm (and with pid: the process's command)
  std::optional<std::string> cgroup;        // --by cgroup: path below the cgroup v2 mount
  std::optional<std::string> container_id;  // from the cgroup path, where a runtime named it
  std::optional<std::string> pod_uid;       // likewise, for a Kubernetes pod
  std::optional<std::string> runtime;       // the container runtime, where the cgroup names it
  // --by retval[:RULE]: the calls' outcome class ("ok", "error", "-EAGAIN",
  // "null", "true", a raw value), as the rule labels it.
  std::optional<std::string> retval;
  // --by argN[:BUCKETS]: the argument's bucket ("[64, 128)") or raw value,
  // and N (0: the first argument).
  std::optional<std::string> arg;
  std::optional<int> arg_index;
  bool other = false;  // the calls of series beyond --max-series, folded into one
  bool any() const { return pid || comm || cgroup || retval || arg || other; }
};

// One frame of a slow call's user stack.
struct StackFrame {
  uint64_t address = 0;  // in the process: a return address, or the exit probe's ip first
  std::string symbol;    // demangled function name; empty when unknown
  uint64_t offset = 0;   // address minus the symbol's start (valid with a symbol)
  std::string binary;    // path of the mapped file; empty when unknown ([anon], JIT)
};

// How a frame reads in every output: "symbol+0xOFFSET (binary)",
// "0xADDRESS (binary)" where unnamed, without " (binary)" where unknown or
// not asked for.
inline std::string frame_text(const StackFrame& frame, bool with_binary = true) {
  char hex[24];
  std::snprintf(
      hex, sizeof hex, frame.symbol.empty() ? "0x%llx" : "+0x%llx",
      static_cast<unsigned long long>(frame.symbol.empty() ? frame.address : frame.offset));
  std::string text = frame.symbol + hex;
  if (with_binary && !frame.binary.empty()) text += " (" + frame.binary + ")";
  return text;
}

// --slowest/--slower-than: one call with who made it and its stack; an
// exemplar of the histogram it is counted in.
struct SlowCall {
  uint64_t duration_ns = 0;  // as counted in the histogram
  // --cpu-split, when known: time switched out (on-CPU is the rest).
  std::optional<uint64_t> runnable_ns;
  std::optional<uint64_t> blocked_ns;
  int pid = 0;
  int tid = 0;
  std::string thread;                          // the thread's name
  std::chrono::system_clock::time_point time;  // when it returned
  std::vector<StackFrame> stack;               // innermost first; empty when not unwound
};

// --slower-than: a call that just ended over the threshold, as it happens.
struct SlowCallReport {
  std::string symbol;  // the function, as the user reads it
  std::string binary;
  uint64_t threshold_ns = 0;
  SlowCall call;
};

// One traced function (or, with --merge, one group of functions).
struct FunctionReport {
  std::string symbol;  // as the user reads it (demangled)
  std::string binary;  // absolute path
  int pid = 0;         // the traced process with -p, else 0
  // How this interval was aggregated.
  AggregationMode mode = AggregationMode::kEvents;
  LatencyHistogram interval;
  LatencyHistogram total;  // since the run started
  LostCounts interval_lost;
  LostCounts total_lost;
  // With --cpu-split: the split of `interval` and of `total`.
  std::optional<CpuSplit> interval_split;
  std::optional<CpuSplit> total_split;
  // With --self: the calls' exclusive time, each call's wall time less that
  // of the traced calls it made directly (on its thread or goroutine) that
  // returned; of `interval` and of `total`.
  std::optional<LatencyHistogram> interval_self;
  std::optional<LatencyHistogram> total_self;
  SeriesLabels series;  // with --by: which part of the function's calls
  // With --by: this series' last report: its processes are gone and it had
  // no call for --series-expiry; it is dropped after this.
  bool series_ended = false;
  // --config: the target's name (label "target") and its extra labels, in
  // the file's order; empty otherwise.
  std::vector<std::pair<std::string, std::string>> labels;
  // --slowest K: the K slowest calls of `interval` and of `total`, slowest
  // first (fewer when fewer calls were over the threshold).
  std::vector<SlowCall> interval_slowest;
  std::vector<SlowCall> total_slowest;
  // A span (model/span.h), not a function: `symbol` is the span's name,
  // `binary` its start's; the durations run from start to end.
  bool span = false;
};

// --follow/--config: the agent's account of itself, for an operator.
struct AgentStatus {
  bool config_last_reload_successful = true;  // --config: the last SIGHUP's file was taken
  uint64_t config_reload_failures = 0;        // reloads refused since the start
  uint64_t functions_attached = 0;            // functions with probes now
  uint64_t files_attached = 0;                // program files (image layers) with probes now
  uint64_t processes_seen = 0;                // seen at exec since the start
  uint64_t exec_dropped = 0;                  // execs the kernel's ring had no room for
  // Processes running a followed program left untraced, by reason
  // (no_function, no_room, kernel_refused).
  std::vector<std::pair<std::string, uint64_t>> attach_failures;
  // The CPU time the probes cost the traced programs: calls (timed and
  // lost) times the calibrated probe cost of each function.
  double probe_cpu_seconds = 0;
  // The kernel memory the agent's BPF maps lock now (tracing and exec watch).
  uint64_t kernel_memory_bytes = 0;
};

struct Report {
  enum class Kind { kInterval, kTotal };
  Kind kind = Kind::kInterval;
  std::chrono::system_clock::time_point run_start;
  std::chrono::system_clock::time_point interval_start;
  std::chrono::system_clock::time_point time;  // end of the interval
  std::vector<FunctionReport> functions;
  uint64_t ringbuf_dropped_total = 0;  // sum of LostCounts::ringbuf over functions
  uint64_t series_folded = 0;        // --by: series folded into `other` (over --max-series) so far
  uint64_t series_expired = 0;       // --by: series ended (processes gone, idle) so far
  uint64_t kernel_memory_bytes = 0;  // what the BPF maps lock (set in total reports)
  std::optional<AgentStatus> agent;  // --follow/--config
  // What the probes have cost the traced programs since the start: each
  // call (timed or lost) times its function's calibrated cost; 0 unless the
  // functions' costs were given (--follow/--config).
  uint64_t probe_cpu_ns = 0;
};

}  // namespace funclatency
