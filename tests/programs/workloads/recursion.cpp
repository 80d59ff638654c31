// recurse(5) calls recurse(4) ... recurse(1). Each level sleeps before
// recursing, chosen so that the inclusive durations are 350, 700, 1400, 2800
// and 5600 us: one call per outer call in each of the log2 rows 256-511 ...
// 4096-8191. --calls is the number of outer calls.
#include <array>
#include <cstdint>

#include "workload_options.h"

namespace {
constexpr int kDepth = 5;
// Own sleep of each level, indexed by depth (1 = innermost).
constexpr std::array<std::uint64_t, kDepth + 1> kOwnSleepUs{0, 350, 350, 700, 1400, 2800};
}  // namespace

extern "C" [[gnu::noinline]] std::uint64_t recurse(int depth,
                                                   funclatency::workload::FunctionTruth* truth) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(kOwnSleepUs[depth] * 1000,
                                          funclatency::workload::kDefaultSpinNs);
  std::uint64_t levels = 1;
  if (depth > 1) {
    levels += funclatency::workload::timed_call(*truth, [&] { return recurse(depth - 1, truth); });
  }
  asm volatile("" ::: "memory");
  return levels;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(
      argc, argv, "workload-recursion", "recurse() to depth 5, --calls outer calls", {.calls = 40});
  if (auto exit_code = run.early_exit()) return *exit_code;
  funclatency::workload::FunctionTruth& truth = run.add_function("recurse");
  run.start();
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    funclatency::workload::timed_call(truth, [&] { return recurse(kDepth, &truth); });
  }
  return run.finish();
}
