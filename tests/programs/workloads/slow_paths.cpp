// The ground truth for --slowest and --slower-than: handle_request() is
// fast (a few microseconds of work) except once in every 1,000 calls, and the
// slow calls always come through one distinct chain of two callers
// (slow_path_outer -> slow_path_inner) while the fast ones come through
// another (fast_path_outer -> fast_path_inner). Built with -O2 and without
// frame pointers, as Debian builds, so a stack is right only if it was
// unwound with the binary's CFI. Besides the usual truth file it writes
// TRUTH.slow: per call that took 500 us or more (by the caller's clock: the
// slow ones, and any fast one a preemption made long) its index, thread id,
// whether it was a slow-path call, the body's own time and the time the
// caller measured around it (a tracer's duration lies between the two), and
// the wall-clock time it returned (to pair it with what a tracer reports).
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

#include "workload_options.h"

namespace {

constexpr std::uint64_t kSlowEvery = 1000;
constexpr std::uint64_t kSlowNs = 5'000'000;
constexpr std::uint64_t kRecordNs = 500'000;  // calls the truth lists

volatile std::uint64_t g_sink = 0;

// What the body measured of the last call on this thread.
thread_local funclatency::workload::BodySpan last_body;

}  // namespace

// The traced function. Returns a value its callers use after the call, so no
// call to it is a tail jump (the callers' frames stay on the stack).
extern "C" [[gnu::noinline]] std::uint64_t handle_request(std::uint64_t work, int slow) {
  const std::uint64_t start = funclatency::workload::body_begin();
  std::uint64_t acc = 0;
  for (std::uint64_t i = 0; i < work; i++) acc += i * i ^ (acc >> 3);
  if (slow) {
    const timespec pause{0, static_cast<long>(kSlowNs)};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nullptr);
  }
  funclatency::workload::body_end(start);
  last_body = {start, funclatency::workload::monotonic_ns()};
  return acc;
}

extern "C" [[gnu::noinline]] std::uint64_t slow_path_inner(std::uint64_t i) {
  const std::uint64_t result = handle_request(100 + i % 7, 1);
  g_sink = g_sink + result;
  return result + 1;
}

extern "C" [[gnu::noinline]] std::uint64_t slow_path_outer(std::uint64_t i) {
  const std::uint64_t result = slow_path_inner(i);
  g_sink = g_sink + result;
  return result + 2;
}

extern "C" [[gnu::noinline]] std::uint64_t fast_path_inner(std::uint64_t i) {
  const std::uint64_t result = handle_request(100 + i % 7, 0);
  g_sink = g_sink + result;
  return result + 3;
}

extern "C" [[gnu::noinline]] std::uint64_t fast_path_outer(std::uint64_t i) {
  const std::uint64_t result = fast_path_inner(i);
  g_sink = g_sink + result;
  return result + 4;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(
      argc, argv, "workload-slow-paths",
      "--calls calls of handle_request() on the main thread (0: until SIGINT); one in 1,000 "
      "sleeps 5 ms and comes through slow_path_outer -> slow_path_inner",
      {.calls = 3000});
  if (auto exit_code = run.early_exit()) return *exit_code;
  auto& truth = run.add_function("handle_request");
  run.start();

  const auto tid = static_cast<long>(syscall(SYS_gettid));
  funclatency::workload::JsonWriter slow_calls;
  slow_calls.begin_array();
  const std::uint64_t calls = run.options().calls ? run.options().calls : UINT64_MAX;
  for (std::uint64_t i = 0; i < calls && run.keep_going(); ++i) {
    const bool slow = i % kSlowEvery == kSlowEvery / 2;
    const std::uint64_t start = funclatency::workload::monotonic_ns();
    funclatency::workload::timed_call(truth,
                                      [&] { slow ? slow_path_outer(i) : fast_path_outer(i); });
    const std::uint64_t caller_ns = funclatency::workload::monotonic_ns() - start;
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    if (slow || caller_ns >= kRecordNs) {
      slow_calls.begin_object()
          .key("index")
          .value(i)
          .key("tid")
          .signed_value(tid)
          .key("slow_path")
          .flag(slow)
          .key("body_ns")
          .value(last_body.end_ns - last_body.start_ns)
          .key("caller_ns")
          .value(caller_ns)
          .key("end_unix_ns")
          .value(static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000 +
                 static_cast<std::uint64_t>(now.tv_nsec))
          .end_object();
    }
  }
  if (!run.options().truth_path.empty()) {
    std::ofstream(run.options().truth_path + ".slow") << slow_calls.end_array().text() << "\n";
  }
  return run.finish();
}
