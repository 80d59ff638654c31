// naming-cet: endbr64-first functions (cet_functions.cpp, cet_walk.cpp).
// First --abandon calls of cet_throw_through() are left by an exception;
// then per --calls round: cet_leaf(), cet_recurse() from depth 4,
// cet_throw_through() returning normally, and cet_walk() over 8 nodes.
#include <array>
#include <cstdio>
#include <stdexcept>

#include "cet_functions.h"
#include "workload_options.h"

namespace {
constexpr std::size_t kListLength = 8;

// Throwing and normal calls come from one call site, at one stack pointer.
[[gnu::noinline]] bool call_throw_through(std::uint64_t tag, bool should_throw,
                                          funclatency::workload::FunctionTruth& truth) {
  try {
    funclatency::workload::timed_call(truth, [&] { return cet_throw_through(tag, should_throw); });
  } catch (const std::runtime_error&) {
    return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(argc, argv, "naming-cet",
                                         "endbr64-first functions: a leaf, recursion, an "
                                         "exception passing through, a tail-call loop",
                                         {.calls = 40, .abandoned_calls = 10});
  if (auto exit_code = run.early_exit()) return *exit_code;
  auto& leaf = run.add_function("cet_leaf");
  auto& recurse = run.add_function("cet_recurse");
  auto& through = run.add_function("cet_throw_through");
  auto& walk = run.add_function("cet_walk");
  std::array<CetNode, kListLength> list{};
  for (std::size_t i = 0; i + 1 < list.size(); ++i) list[i].next = &list[i + 1];
  run.start();
  std::uint64_t caught = 0;
  for (std::uint64_t i = 0; i < run.options().abandoned_calls && run.keep_going(); ++i) {
    caught += call_throw_through(i, true, through) ? 1 : 0;
  }
  std::uint64_t checksum = 0;
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    using funclatency::workload::timed_call;
    checksum += timed_call(leaf, [&] { return cet_leaf(i); });
    checksum += timed_call(recurse, [&] { return cet_recurse(kCetDepth, &recurse); });
    call_throw_through(i, false, through);
    timed_call(walk, [&] { cet_walk(list.data()); });
  }
  std::printf("caught %llu checksum %llu visits %llu\n", static_cast<unsigned long long>(caught),
              static_cast<unsigned long long>(checksum),
              static_cast<unsigned long long>(list[kListLength - 1].visits));
  return run.finish();
}
