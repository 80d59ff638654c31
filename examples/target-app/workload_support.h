// What target-app and the test workloads share: sleeping precisely, recording
// the ground truth a tracer is checked against, and the start/stop protocol
// the end-to-end tests drive (print readiness, wait for SIGUSR1, stop cleanly
// on SIGINT/SIGTERM).
#pragma once

#include <getopt.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace funclatency::workload {

// Rows as libbpf-tools prints a usec histogram: row 0 holds 0 and 1 us, row r
// holds [2^r, 2^(r+1) - 1] us of floor(duration_ns / 1000).
inline constexpr std::size_t kLog2Rows = 48;
std::size_t usec_row(std::uint64_t duration_ns);

// A tracer's probes fire inside the interval the program measures around a
// call, so a tracer sees each call a little shorter: a few microseconds of
// probe work, more when an interrupt or the hypervisor takes the CPU in that
// gap. A call measured closer than this above its row's lower edge may land
// one row lower there. Calls drawn from the workloads' clusters stay far
// (15% and more) from every edge; only outliers (late wakeups) come this close.
std::uint64_t edge_margin_us(std::uint64_t row_low_us);

std::uint64_t monotonic_ns();

// Sleeps until `duration_ns` has passed on CLOCK_MONOTONIC: the kernel sleep
// ends `spin_ns` early and the rest is busy-waited, because wakeups here
// overshoot by 50-150 us (milliseconds now and then), which would smear a
// duration across a bucket edge.
void precise_sleep_ns(std::uint64_t duration_ns, std::uint64_t spin_ns);
inline constexpr std::uint64_t kDefaultSpinNs = 200'000;

// The whole text as an unsigned decimal integer, or nothing (option values).
std::optional<std::uint64_t> whole_number(const char* text);

// The command lines of target-app and the workloads: getopt_long over argv
// with `table` (ending in a zero entry; "help" gets the code 'h', as -h).
// `handle(code, value)` takes each option and returns an exit code to stop
// with, or nothing to go on; `usage` is printed for -h/--help (exit 0). An
// unknown option, a missing value or a stray argument is one line on stderr
// naming `program`, and exit code 2.
struct OptionHandler {
  virtual std::optional<int> handle(int code, const char* value) = 0;

 protected:
  ~OptionHandler() = default;
};
std::optional<int> parse_command_line(int argc, char** argv, const char* program,
                                      const ::option* table, const std::string& usage,
                                      OptionHandler& handler);
// A bad option value: says why on stderr; returns exit code 2.
int bad_option_value(const char* program, const char* name, const char* value,
                     const char* expected);

// Involuntary context switches of the calling thread so far.
std::uint64_t involuntary_switches();

// The time a traced function measured of its own body. A tracer's entry probe
// fires before the body starts and its return probe after the body ends, both
// inside the caller's measurement, so whatever happens around the probes (an
// interrupt, a vCPU paused by the hypervisor) the tracer's duration lies
// between the two. A workload gets exact bounds instead of heuristics by
// placing a BodyTimer first in the traced function.
struct BodySpan {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};
// The span the innermost timed_call() on this thread is waiting for.
BodySpan*& current_body_span();

// For a traced function whose unwinding must stay as it is (an object with a
// destructor would give its frame a landing pad) or that leaves by longjmp:
// body_begin() first, body_end() on the normal return path only.
inline std::uint64_t body_begin() {
  return monotonic_ns();
}
inline void body_end(std::uint64_t start_ns) {
  if (BodySpan* span = current_body_span()) *span = {start_ns, monotonic_ns()};
}

class BodyTimer {
 public:
  BodyTimer() : span_(current_body_span()), start_ns_(monotonic_ns()) {}
  ~BodyTimer() {
    if (span_ != nullptr) *span_ = {start_ns_, monotonic_ns()};
  }
  BodyTimer(const BodyTimer&) = delete;
  BodyTimer& operator=(const BodyTimer&) = delete;

 private:
  BodySpan* span_;
  std::uint64_t start_ns_;
};

// A JSON value written by hand, as the truth is (nlohmann/json was most of a
// workload's compile time): nested objects and arrays of integers and
// booleans, what the workloads' extra truth files hold. Commas go in by
// themselves; keys are quoted as the truth's names are.
class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  // Inside an object: the name of the value or container that follows.
  JsonWriter& key(const std::string& name);
  JsonWriter& value(std::uint64_t number) { return scalar(std::to_string(number)); }
  JsonWriter& signed_value(std::int64_t number) { return scalar(std::to_string(number)); }
  JsonWriter& flag(bool value) { return scalar(value ? "true" : "false"); }
  const std::string& text() const { return out_; }

 private:
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  JsonWriter& scalar(const std::string& text);
  void before_value();
  std::string out_;
  std::vector<bool> empty_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

// Ground truth for one function: calls made, how they ended, and the log2
// usec histogram of what the program measured around each completed call.
// Thread-safe; threads record into one instance.
class FunctionTruth {
 public:
  explicit FunctionTruth(std::string name) : name_(std::move(name)) {}

  // `preempted`: the thread was switched out involuntarily during the measured
  // interval, so the tracer's view may be shorter by more than the edge margin.
  // A thread's first returning call of a function is treated the same way: the
  // kernel sets up its uprobe state (the out-of-line area for single-stepping,
  // per-thread task state) on first use, possibly outside the tracer's window.
  // Such calls are reported as "disturbed": a tracer may see them in any lower row.
  // With `body_ns` (the function timed its body) neither guess is needed: the
  // tracer's row lies between the body's and the caller's.
  void record_return(std::uint64_t duration_ns, bool preempted,
                     std::optional<std::uint64_t> body_ns = std::nullopt);
  // Also keeps each returned call's duration, and its body's when timed, for
  // the medians in the JSON ("p50_ns", "body_p50_ns"): the median of a
  // tracer's durations lies between the two (each call's does). Kept for the
  // first kMaxKeptCalls returns; the medians are left out beyond that.
  void keep_medians() { keep_medians_ = true; }
  // A call that left by an exception or longjmp: a tracer sees no return.
  void record_abandoned() { abandoned_.fetch_add(1, std::memory_order_relaxed); }

  const std::string& name() const { return name_; }
  // Appends this function's truth as one JSON object (written by hand: with
  // nlohmann/json the support code was most of target-app's compile time).
  void append_json(std::string& out) const;

 private:
  std::string name_;
  std::atomic<std::uint64_t> returned_{0};
  std::atomic<std::uint64_t> abandoned_{0};
  std::atomic<std::uint64_t> sum_ns_{0};
  // Returns neither preempted nor a thread's first: their mean follows the
  // speed the machine ran the function at, without a preemption's outlier.
  std::atomic<std::uint64_t> undisturbed_{0};
  std::atomic<std::uint64_t> undisturbed_sum_ns_{0};
  std::atomic<std::uint64_t> min_ns_{UINT64_MAX};
  std::atomic<std::uint64_t> max_ns_{0};
  // Returns whose function timed its body, and the sum and the longest of
  // those bodies (each capped at its caller's duration): a tracer's sum and
  // longest call of them are no less.
  std::atomic<std::uint64_t> timed_bodies_{0};
  std::atomic<std::uint64_t> body_sum_ns_{0};
  std::atomic<std::uint64_t> body_max_ns_{0};
  void keep(std::uint64_t duration_ns, std::optional<std::uint64_t> body_ns);

  static constexpr std::size_t kMaxKeptCalls = 100'000;
  bool keep_medians_ = false;
  mutable std::mutex kept_mutex_;
  std::vector<std::uint64_t> kept_ns_, kept_body_ns_;  // under kept_mutex_
  bool kept_all_ = true;                               // under kept_mutex_
  std::array<std::atomic<std::uint64_t>, kLog2Rows> rows_{};
  std::array<std::atomic<std::uint64_t>, kLog2Rows> near_edge_{};
  std::array<std::atomic<std::uint64_t>, kLog2Rows> disturbed_{};
  // [row][lowest row]: calls whose body alone fell in a lower row.
  std::array<std::array<std::atomic<std::uint64_t>, kLog2Rows>, kLog2Rows> body_lower_{};
};

// Calls `call` and records it in `truth` the way a tracer would time it: the
// duration of a normal return, or an abandoned call when an exception leaves
// (the exception is rethrown).
template <typename Call>
decltype(auto) timed_call(FunctionTruth& truth, Call&& call) {
  struct Recorder {
    FunctionTruth& truth;
    BodySpan body{};
    BodySpan* enclosing_span = std::exchange(current_body_span(), &body);
    std::uint64_t switches_before = involuntary_switches();
    std::uint64_t start_ns = monotonic_ns();
    int exceptions_before = std::uncaught_exceptions();
    ~Recorder() {
      std::uint64_t end_ns = monotonic_ns();
      current_body_span() = enclosing_span;
      if (std::uncaught_exceptions() > exceptions_before) {
        truth.record_abandoned();
        return;
      }
      std::optional<std::uint64_t> body_ns;
      if (body.end_ns != 0) body_ns = body.end_ns - body.start_ns;
      truth.record_return(end_ns - start_ns, involuntary_switches() != switches_before, body_ns);
    }
  } recorder{truth};
  return call();
}

// The functions a program reports, in a stable order. Entries never move, so
// references handed to threads stay valid.
class TruthReport {
 public:
  FunctionTruth& add(std::string name) { return functions_.emplace_back(std::move(name)); }
  // Writes {"program", "pid", "functions": [...]} to `path`; false on failure.
  bool write(const std::string& path, const std::string& program) const;

 private:
  std::deque<FunctionTruth> functions_;
};

// Start/stop protocol. Construct first in main(), before any thread: it blocks
// SIGUSR1/SIGINT/SIGTERM so that threads created later inherit the mask and
// only this object receives them.
class RunControl {
 public:
  RunControl();
  ~RunControl();
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  // Prints "ready pid=N" on stdout. With `wait_for_start`, then blocks until
  // SIGUSR1 (start) or SIGINT/SIGTERM (stop before any work). Afterwards a
  // watcher turns SIGINT/SIGTERM into stop_requested().
  void announce_and_wait(bool wait_for_start);
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }

 private:
  void watch_stop_signals();

  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::thread watcher_;
};

// Paces calls at `rate` per second (0: as fast as possible) from a fixed start,
// so a slow call is caught up rather than stretching the schedule.
class Pacer {
 public:
  explicit Pacer(double rate) : rate_(rate), start_ns_(monotonic_ns()) {}
  void wait_for_call(std::uint64_t call_index) const;

 private:
  double rate_;
  std::uint64_t start_ns_;
};

// How many of `total` calls thread `index` of `threads` makes.
std::uint64_t share_of_calls(std::uint64_t total, unsigned threads, unsigned index);

}  // namespace funclatency::workload
