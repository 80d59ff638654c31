// The ground truth for --cpu-split: a traced function that burns a known
// amount of CPU time, then sleeps a known time, first alone and then while
// busy threads pinned to its CPU compete for it. Besides the usual truth
// file it writes TRUTH.split: per call, the thread CPU time the body used
// (CLOCK_THREAD_CPUTIME_ID), the wall and CPU time of the burn, the time the
// scheduler says the thread waited for a CPU during the burn (run_delay, from
// /proc/thread-self/schedstat: preempted, since the burn never sleeps), the
// sleep asked for and the sleep measured
// around it, and the caller's wall time. The burn's wall less its CPU time is
// not all waiting for the CPU: on a virtual machine the hypervisor steals time
// from a running thread, and neither its CPU clock nor the run queue counts it.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "workload_options.h"

namespace {

constexpr std::uint64_t kBurnNs = 1'500'000;   // row 10 of a usec histogram (1024-2047 us)
constexpr std::uint64_t kSleepNs = 6'000'000;  // row 12 (4096-8191 us)
constexpr unsigned kCompetitors = 2;           // busy threads on the same CPU

std::uint64_t thread_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// The scheduler's account of this thread (/proc/thread-self/schedstat): the
// time it waited on a run queue and the times it got a CPU. The file is opened
// once per thread (thread-self names the thread that opens it) and read again
// with pread.
struct RunQueueWaits {
  std::uint64_t delay_ns = 0;
  std::uint64_t arrivals = 0;
};

RunQueueWaits run_queue_waits() {
  thread_local const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  char text[128];
  const ssize_t size = fd < 0 ? -1 : pread(fd, text, sizeof(text) - 1, 0);
  if (size <= 0) return {};
  text[size] = '\0';
  char* rest = nullptr;
  std::strtoull(text, &rest, 10);  // the time on the CPU
  RunQueueWaits waits;
  waits.delay_ns = std::strtoull(rest, &rest, 10);
  waits.arrivals = std::strtoull(rest, nullptr, 10);
  return waits;
}

struct CallSample {
  std::uint64_t burn_cpu_ns = 0;   // CPU time of the burn
  std::uint64_t burn_wall_ns = 0;  // wall time of the burn: the rest waited for the CPU
  std::uint64_t cpu_ns = 0;
  std::uint64_t burn_run_delay_ns = 0;  // preempted during the burn, waiting on the run queue
  std::uint64_t burn_arrivals = 0;      // times the burn got a CPU back
  std::uint64_t sleep_asked_ns = 0;
  std::uint64_t sleep_ns = 0;
};

// What the body measured of the last call on this thread.
thread_local CallSample last_sample;

// Burns CPU until the thread has run `burn_ns`, then sleeps `sleep_ns`.
[[gnu::always_inline]] inline void burn_then_sleep(std::uint64_t burn_ns, std::uint64_t sleep_ns) {
  const RunQueueWaits waits_start = run_queue_waits();
  const std::uint64_t cpu_start = thread_cpu_ns();
  const std::uint64_t burn_start = funclatency::workload::monotonic_ns();
  while (thread_cpu_ns() - cpu_start < burn_ns) asm volatile("" ::: "memory");
  const RunQueueWaits waits_end = run_queue_waits();
  last_sample.burn_run_delay_ns = waits_end.delay_ns - waits_start.delay_ns;
  last_sample.burn_arrivals = waits_end.arrivals - waits_start.arrivals;
  const std::uint64_t sleep_start = funclatency::workload::monotonic_ns();
  last_sample.burn_cpu_ns = thread_cpu_ns() - cpu_start;
  last_sample.burn_wall_ns = sleep_start - burn_start;
  const timespec pause{static_cast<time_t>(sleep_ns / 1'000'000'000),
                       static_cast<long>(sleep_ns % 1'000'000'000)};
  clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nullptr);
  last_sample.sleep_ns = funclatency::workload::monotonic_ns() - sleep_start;
  last_sample.sleep_asked_ns = sleep_ns;
  last_sample.cpu_ns = thread_cpu_ns() - cpu_start;
}

}  // namespace

extern "C" [[gnu::noinline]] void split_alone(std::uint64_t burn_ns, std::uint64_t sleep_ns) {
  funclatency::workload::BodyTimer body;
  burn_then_sleep(burn_ns, sleep_ns);
}

extern "C" [[gnu::noinline]] void split_contended(std::uint64_t burn_ns, std::uint64_t sleep_ns) {
  funclatency::workload::BodyTimer body;
  burn_then_sleep(burn_ns, sleep_ns);
}

namespace {

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void write_sample(funclatency::workload::JsonWriter& out, const CallSample& sample,
                  std::uint64_t wall_ns) {
  out.begin_object()
      .key("burn_cpu_ns")
      .value(sample.burn_cpu_ns)
      .key("burn_wall_ns")
      .value(sample.burn_wall_ns)
      .key("cpu_ns")
      .value(sample.cpu_ns)
      .key("burn_run_delay_ns")
      .value(sample.burn_run_delay_ns)
      .key("burn_arrivals")
      .value(sample.burn_arrivals)
      .key("sleep_asked_ns")
      .value(sample.sleep_asked_ns)
      .key("sleep_ns")
      .value(sample.sleep_ns)
      .key("wall_ns")
      .value(wall_ns)
      .end_object();
}

}  // namespace

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(
      argc, argv, "workload-cpu-split",
      "--calls calls of split_alone(), then as many of split_contended() with busy threads "
      "pinned to the same CPU",
      {.calls = 30});
  if (auto exit_code = run.early_exit()) return *exit_code;
  auto& alone_truth = run.add_function("split_alone");
  auto& contended_truth = run.add_function("split_contended");
  run.start();
  pin_to_cpu(0);

  // {"split_alone": [sample...], "split_contended": [sample...]}, written as
  // the calls are made (first the alone ones, then the contended ones).
  funclatency::workload::JsonWriter samples;
  samples.begin_object();
  auto call = [&](funclatency::workload::FunctionTruth& truth, auto function) {
    const std::uint64_t start = funclatency::workload::monotonic_ns();
    funclatency::workload::timed_call(truth, [&] { function(kBurnNs, kSleepNs); });
    write_sample(samples, last_sample, funclatency::workload::monotonic_ns() - start);
  };
  samples.key("split_alone").begin_array();
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    call(alone_truth, split_alone);
  }
  samples.end_array();

  std::atomic<bool> compete{true};
  std::vector<std::thread> competitors;
  for (unsigned i = 0; i < kCompetitors; ++i) {
    competitors.emplace_back([&] {
      pin_to_cpu(0);
      while (compete.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    });
  }
  samples.key("split_contended").begin_array();
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    call(contended_truth, split_contended);
  }
  samples.end_array().end_object();
  compete = false;
  for (auto& thread : competitors) thread.join();

  if (!run.options().truth_path.empty()) {
    std::ofstream(run.options().truth_path + ".split") << samples.text() << "\n";
  }
  return run.finish();
}
