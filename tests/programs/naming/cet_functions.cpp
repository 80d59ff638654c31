// Built with -fcf-protection=branch: each function starts with endbr64.
#include "cet_functions.h"

#include <array>
#include <stdexcept>

namespace {
// Own sleep of each level of cet_recurse, indexed by depth (1 = innermost).
constexpr std::array<std::uint64_t, kCetDepth + 1> kOwnSleepUs{0, 300, 300, 600, 1200};

[[gnu::noinline]] void throw_if(bool should_throw) {
  if (should_throw) throw std::runtime_error("naming-cet: thrown on purpose");
  asm volatile("" ::: "memory");
}
}  // namespace

std::uint64_t cet_leaf(std::uint64_t tag) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(kCetSleepUs * 1000,
                                          funclatency::workload::kDefaultSpinNs);
  asm volatile("" ::: "memory");
  return tag + 1;
}

std::uint64_t cet_recurse(int depth, funclatency::workload::FunctionTruth* truth) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(kOwnSleepUs[depth] * 1000,
                                          funclatency::workload::kDefaultSpinNs);
  std::uint64_t levels = 1;
  if (depth > 1) {
    levels +=
        funclatency::workload::timed_call(*truth, [&] { return cet_recurse(depth - 1, truth); });
  }
  asm volatile("" ::: "memory");
  return levels;
}

std::uint64_t cet_throw_through(std::uint64_t tag, bool should_throw) {
  const std::uint64_t body_start = funclatency::workload::body_begin();
  funclatency::workload::precise_sleep_ns(kCetSleepUs * 1000,
                                          funclatency::workload::kDefaultSpinNs);
  throw_if(should_throw);
  asm volatile("" ::: "memory");
  funclatency::workload::body_end(body_start);
  return tag + 2;
}
