// Many threads calling one traced function: --calls in total over --threads.
// mt_op() sleeps 295-345 us or 600-700 us (rows 256-511 and 512-1023). Its
// busy-waited tail is short (50 us) so that 8 threads leave the CPUs mostly
// idle; the clusters sit low in their rows to absorb the longer overshoot.
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "workload_options.h"

namespace {
constexpr std::uint64_t kSpinNs = 50'000;

std::uint64_t draw_sleep_ns(std::mt19937_64& random) {
  std::uniform_int_distribution<std::uint64_t> short_sleep(295'000, 345'000);
  std::uniform_int_distribution<std::uint64_t> long_sleep(600'000, 700'000);
  return random() % 2 == 0 ? short_sleep(random) : long_sleep(random);
}
}  // namespace

extern "C" [[gnu::noinline]] std::uint64_t mt_op(std::uint64_t sleep_ns) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(sleep_ns, kSpinNs);
  asm volatile("" ::: "memory");
  return sleep_ns;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(argc, argv, "workload-threads",
                                         "--calls calls of mt_op() over --threads threads",
                                         {.calls = 12'000, .threads = 8});
  if (auto exit_code = run.early_exit()) return *exit_code;
  funclatency::workload::FunctionTruth& truth = run.add_function("mt_op");
  run.start();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < run.options().threads; ++t) {
    std::uint64_t calls =
        funclatency::workload::share_of_calls(run.options().calls, run.options().threads, t);
    workers.emplace_back([&, calls, t] {
      std::mt19937_64 random(run.options().seed + t);
      std::uint64_t sink = 0;
      for (std::uint64_t i = 0; i < calls && run.keep_going(); ++i) {
        std::uint64_t sleep_ns = draw_sleep_ns(random);
        sink += funclatency::workload::timed_call(truth, [&] { return mt_op(sleep_ns); });
      }
      asm volatile("" : : "r"(sink));
    });
  }
  for (std::thread& worker : workers) worker.join();
  return run.finish();
}
