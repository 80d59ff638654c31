// longjmp out of a traced function. First --abandon calls of jump_out() leave
// by longjmp back to main, then --calls calls return normally, on one thread.
// Every call sleeps 350 us (row 256-511).
#include <csetjmp>
#include <cstdint>

#include "workload_options.h"

namespace {
constexpr std::uint64_t kSleepUs = 350;
}  // namespace

extern "C" [[gnu::noinline]] std::uint64_t jump_out(std::uint64_t tag, std::jmp_buf* escape) {
  const std::uint64_t body_start = funclatency::workload::body_begin();
  funclatency::workload::precise_sleep_ns(kSleepUs * 1000, funclatency::workload::kDefaultSpinNs);
  if (escape != nullptr) std::longjmp(*escape, 1);
  asm volatile("" ::: "memory");
  funclatency::workload::body_end(body_start);
  return tag + 1;
}

namespace {
// Every call of jump_out(), leaving or not, comes from this one call site, so
// all enter at the same stack pointer: a tracer must still tell a new call from
// the frame a longjmp abandoned there. Kept apart from main() so that no object
// with a destructor lives between setjmp and longjmp.
[[gnu::noinline]] void call_jump_out(std::uint64_t tag, bool leave_by_longjmp,
                                     funclatency::workload::FunctionTruth& truth) {
  std::jmp_buf escape;
  funclatency::workload::BodySpan body{};
  if (setjmp(escape) != 0) {
    funclatency::workload::current_body_span() = nullptr;
    truth.record_abandoned();
    return;
  }
  funclatency::workload::current_body_span() = &body;
  std::uint64_t switches_before = funclatency::workload::involuntary_switches();
  std::uint64_t start_ns = funclatency::workload::monotonic_ns();
  jump_out(tag, leave_by_longjmp ? &escape : nullptr);
  std::uint64_t end_ns = funclatency::workload::monotonic_ns();
  funclatency::workload::current_body_span() = nullptr;
  truth.record_return(end_ns - start_ns,
                      funclatency::workload::involuntary_switches() != switches_before,
                      body.end_ns - body.start_ns);
}
}  // namespace

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(argc, argv, "workload-longjmp",
                                         "--abandon calls of jump_out() that longjmp out, then "
                                         "--calls normal calls",
                                         {.calls = 50, .abandoned_calls = 20});
  if (auto exit_code = run.early_exit()) return *exit_code;
  funclatency::workload::FunctionTruth& truth = run.add_function("jump_out");
  run.start();
  for (std::uint64_t i = 0; i < run.options().abandoned_calls && run.keep_going(); ++i) {
    call_jump_out(i, true, truth);
  }
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    call_jump_out(i, false, truth);
  }
  return run.finish();
}
