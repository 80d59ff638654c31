#include "traced_functions.h"

#include "workload_support.h"

extern "C" [[gnu::noinline]] std::uint64_t slow_op(std::uint64_t sleep_ns) {
  // Bounds what a tracer may measure for this call; see BodyTimer.
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(sleep_ns, funclatency::workload::kDefaultSpinNs);
  // Keeps the sleep an ordinary call rather than a tail jump, so slow_op has
  // its own frame and return like most functions a user would time.
  asm volatile("" ::: "memory");
  return sleep_ns;
}

extern "C" [[gnu::noinline]] std::uint64_t fast_op(std::uint64_t seed) {
  std::uint64_t state = seed | 1;
  for (int round = 0; round < 256; ++round) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
  }
  return state;
}
