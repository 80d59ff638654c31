// C++ exceptions leaving traced functions. First --abandon calls of each
// function throw (caught by main), then --calls calls return normally, all on
// one thread. may_throw() throws itself; workloads::Relay::pass_through() (a
// C++ name, traced by its mangled name) is left by an exception thrown in a
// function it calls. Every call sleeps 350 us (row 256-511).
#include <cstdint>
#include <stdexcept>

#include "workload_options.h"

namespace {
constexpr std::uint64_t kSleepUs = 350;

[[gnu::noinline]] void throw_if(bool should_throw) {
  if (should_throw) throw std::runtime_error("workload-exceptions: thrown on purpose");
}
}  // namespace

extern "C" [[gnu::noinline]] std::uint64_t may_throw(std::uint64_t tag, int should_throw) {
  const std::uint64_t body_start = funclatency::workload::body_begin();
  funclatency::workload::precise_sleep_ns(kSleepUs * 1000, funclatency::workload::kDefaultSpinNs);
  if (should_throw != 0) throw std::runtime_error("workload-exceptions: thrown on purpose");
  asm volatile("" ::: "memory");
  funclatency::workload::body_end(body_start);
  return tag + 1;
}

namespace workloads {
struct Relay {
  [[gnu::noinline]] static std::uint64_t pass_through(std::uint64_t tag, bool should_throw);
};

std::uint64_t Relay::pass_through(std::uint64_t tag, bool should_throw) {
  const std::uint64_t body_start = funclatency::workload::body_begin();
  funclatency::workload::precise_sleep_ns(kSleepUs * 1000, funclatency::workload::kDefaultSpinNs);
  throw_if(should_throw);
  asm volatile("" ::: "memory");
  funclatency::workload::body_end(body_start);
  return tag + 2;
}
}  // namespace workloads

namespace {
// Throwing and normal calls come from one call site each, so they enter at the
// same stack pointer: a tracer must still tell a new call from the frame an
// exception abandoned there.
[[gnu::noinline]] bool call_may_throw(std::uint64_t tag, bool should_throw,
                                      funclatency::workload::FunctionTruth& truth) {
  try {
    funclatency::workload::timed_call(truth, [&] { return may_throw(tag, should_throw ? 1 : 0); });
  } catch (const std::runtime_error&) {
    return true;
  }
  return false;
}

[[gnu::noinline]] bool call_pass_through(std::uint64_t tag, bool should_throw,
                                         funclatency::workload::FunctionTruth& truth) {
  try {
    funclatency::workload::timed_call(
        truth, [&] { return workloads::Relay::pass_through(tag, should_throw); });
  } catch (const std::runtime_error&) {
    return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(argc, argv, "workload-exceptions",
                                         "--abandon throwing calls, then --calls normal calls of "
                                         "may_throw() and workloads::Relay::pass_through()",
                                         {.calls = 50, .abandoned_calls = 20});
  if (auto exit_code = run.early_exit()) return *exit_code;
  funclatency::workload::FunctionTruth& thrower = run.add_function("may_throw");
  funclatency::workload::FunctionTruth& relay = run.add_function("workloads::Relay::pass_through");
  run.start();
  std::uint64_t caught = 0;
  for (std::uint64_t i = 0; i < run.options().abandoned_calls && run.keep_going(); ++i) {
    caught += call_may_throw(i, true, thrower) ? 1 : 0;
    caught += call_pass_through(i, true, relay) ? 1 : 0;
  }
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    call_may_throw(i, false, thrower);
    call_pass_through(i, false, relay);
  }
  std::printf("caught %llu\n", static_cast<unsigned long long>(caught));
  return run.finish();
}
