// The ground truth for --by retval and --by argN: functions whose outcome
// follows a known schedule, each outcome with a duration of its own, and a
// function whose integer argument (a request size) follows one too. The
// truth file has one entry per function and outcome ("open_resource:error",
// "read_block:-EAGAIN", "handle_request:[64, 128)"), as the series the tool
// should report, so every series' count and latency is checked alone.
//   open_resource(i) -> int: 0, or 5 when i % 4 == 3 (the C convention)
//   lookup(i)        -> pointer: NULL when i % 5 == 0
//   read_block(i)    -> int: -EAGAIN when i % 3 == 1, else -EIO when
//                       i % 7 == 0, else 512 (bytes read: negative errno)
//   is_ready(i)      -> bool: true when i % 2 == 0
//   handle_request(size): size = 16 << (i % 5), plus i % 7 (log2 buckets
//                       [16, 32) ... [256, 512))
#include <cerrno>
#include <cstdint>
#include <map>
#include <string>

#include "workload_options.h"

namespace {
constexpr std::uint64_t kSpinNs = 60'000;
int g_object = 1;

void work_ns(std::uint64_t ns) {
  funclatency::workload::BodyTimer body;
  funclatency::workload::precise_sleep_ns(ns, kSpinNs);
}
}  // namespace

extern "C" [[gnu::noinline]] int open_resource(std::uint64_t i) {
  const bool fails = i % 4 == 3;
  work_ns(fails ? 300'000 : 100'000);
  asm volatile("" ::: "memory");
  return fails ? 5 : 0;
}

extern "C" [[gnu::noinline]] int* lookup(std::uint64_t i) {
  const bool missing = i % 5 == 0;
  work_ns(missing ? 70'000 : 150'000);
  asm volatile("" ::: "memory");
  return missing ? nullptr : &g_object;
}

extern "C" [[gnu::noinline]] int read_block(std::uint64_t i) {
  const int result = i % 3 == 1 ? -EAGAIN : i % 7 == 0 ? -EIO : 512;
  work_ns(result == -EAGAIN ? 80'000 : result == -EIO ? 400'000 : 200'000);
  asm volatile("" ::: "memory");
  return result;
}

extern "C" [[gnu::noinline]] bool is_ready(std::uint64_t i) {
  work_ns(90'000);
  asm volatile("" ::: "memory");
  return i % 2 == 0;
}

extern "C" [[gnu::noinline]] std::uint64_t handle_request(std::uint64_t size) {
  work_ns(100'000 + size * 1'000);
  asm volatile("" ::: "memory");
  return size * 2;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(
      argc, argv, "workload-outcomes",
      "--calls rounds of open_resource, lookup, read_block, is_ready and handle_request, "
      "each outcome on a fixed schedule (see the source)",
      {.calls = 200});
  if (auto exit_code = run.early_exit()) return *exit_code;
  // Truth entries by outcome, created as outcomes appear (entries never move).
  std::map<std::string, funclatency::workload::FunctionTruth*> truths;
  auto truth_of = [&](const std::string& name) -> funclatency::workload::FunctionTruth& {
    auto& entry = truths[name];
    if (!entry) entry = &run.add_function(name);
    return *entry;
  };
  // The schedule decides each outcome before the call: the truth entry is
  // the series the call belongs in.
  for (std::uint64_t i = 0; i < run.options().calls; ++i) {
    truth_of(i % 4 == 3 ? "open_resource:error" : "open_resource:ok");
    truth_of(i % 5 == 0 ? "lookup:null" : "lookup:ok");
    truth_of(i % 3 == 1 ? "read_block:-EAGAIN" : i % 7 == 0 ? "read_block:-EIO" : "read_block:ok");
    truth_of(i % 2 == 0 ? "is_ready:true" : "is_ready:false");
    const std::uint64_t low = 16u << (i % 5);
    truth_of("handle_request:[" + std::to_string(low) + ", " + std::to_string(2 * low) + ")");
  }
  run.start();
  std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    namespace w = funclatency::workload;
    sink += w::timed_call(*truths[i % 4 == 3 ? "open_resource:error" : "open_resource:ok"],
                          [&] { return open_resource(i); });
    sink += w::timed_call(*truths[i % 5 == 0 ? "lookup:null" : "lookup:ok"],
                          [&] { return lookup(i) != nullptr; });
    sink += w::timed_call(*truths[i % 3 == 1   ? "read_block:-EAGAIN"
                                  : i % 7 == 0 ? "read_block:-EIO"
                                               : "read_block:ok"],
                          [&] { return read_block(i); });
    sink += w::timed_call(*truths[i % 2 == 0 ? "is_ready:true" : "is_ready:false"],
                          [&] { return is_ready(i); });
    const std::uint64_t low = 16u << (i % 5);
    sink += w::timed_call(
        *truths["handle_request:[" + std::to_string(low) + ", " + std::to_string(2 * low) + ")"],
        [&] { return handle_request(low + i % 7); });
  }
  asm volatile("" : : "r"(sink));
  return run.finish();
}
