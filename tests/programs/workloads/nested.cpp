// outer_op() sleeps 800 us, then calls inner_op(), which sleeps 700 us: with
// both traced, inner_op lands in row 512-1023 and outer_op (about 1500 us,
// inclusive) in row 1024-2047. --calls is the number of outer_op calls.
#include <cstdint>

#include "workload_options.h"

namespace {
constexpr std::uint64_t kInnerSleepUs = 700;
constexpr std::uint64_t kOuterOwnSleepUs = 800;
}  // namespace

extern "C" [[gnu::noinline]] std::uint64_t inner_op(std::uint64_t tag) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(kInnerSleepUs * 1000,
                                          funclatency::workload::kDefaultSpinNs);
  asm volatile("" ::: "memory");
  return tag + 1;
}

extern "C" [[gnu::noinline]] std::uint64_t outer_op(std::uint64_t tag,
                                                    funclatency::workload::FunctionTruth* inner) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(kOuterOwnSleepUs * 1000,
                                          funclatency::workload::kDefaultSpinNs);
  std::uint64_t result = funclatency::workload::timed_call(*inner, [&] { return inner_op(tag); });
  asm volatile("" ::: "memory");
  return result;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(argc, argv, "workload-nested",
                                         "outer_op() calls inner_op(), --calls outer calls",
                                         {.calls = 50});
  if (auto exit_code = run.early_exit()) return *exit_code;
  funclatency::workload::FunctionTruth& outer = run.add_function("outer_op");
  funclatency::workload::FunctionTruth& inner = run.add_function("inner_op");
  run.start();
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    funclatency::workload::timed_call(outer, [&] { return outer_op(i, &inner); });
  }
  return run.finish();
}
