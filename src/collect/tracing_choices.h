// What a run chooses of the kernel side (the mode, the --by keys, the
// limits the probes' maps set), in the words cli/ and agent/ use: they set
// these through this header, and only collect/ and probe/ read the kernel's
// ABI header (scripts/include-graph holds that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/funclatency.h"

namespace funclatency {

enum class ModeChoice { kAuto, kEvents, kKernel };

// The fl_mode a function starts in: kernel for --mode kernel, else events
// (auto starts in events and the policy moves it).
inline uint32_t kernel_mode_of(ModeChoice mode) {
  return mode == ModeChoice::kKernel ? FL_MODE_KERNEL : FL_MODE_EVENTS;
}

// --by keys as the probes' FL_BY_* bits.
inline constexpr uint32_t kSeriesByPid = FL_BY_PID;
inline constexpr uint32_t kSeriesByComm = FL_BY_COMM;
inline constexpr uint32_t kSeriesByCgroup = FL_BY_CGROUP;
inline constexpr uint32_t kSeriesByValue = FL_BY_VALUE;

// Where a --by value key's value comes from (ValueSeries::source).
inline constexpr uint32_t kValueFromRetval = FL_VALUE_RETVAL;
inline constexpr uint32_t kValueFromArg = FL_VALUE_ARG;

// -c/--cgroup directories the probes filter on, at most.
inline constexpr size_t kMaxCgroupFilters = FL_MAX_CGROUP_FILTERS;
// --slowest K, at most (the probes keep the last K durations sent).
inline constexpr size_t kMaxSlowest = FL_MAX_SLOWEST;
// --go-goroutines: goroutines inside traced calls at once, by default and at
// most (the bound costs 16 B a hash bucket, rounded up to a power of two).
inline constexpr uint32_t kDefaultGoGoroutines = FL_GO_MAX_GOROUTINES;
inline constexpr uint32_t kMaxGoGoroutines = 1u << 20;

// The flags of a function whose target has --by keys of its own
// (`by_bits`: series_by_bits), within the run's: its calls are split by
// those keys only.
inline uint32_t own_series_by_flags(uint32_t by_bits) {
  return FL_FN_OWN_BY | (by_bits << FL_FN_BY_SHIFT);
}

// FL_BY_* bits of `by` keys (pid, comm, cgroup, and on the command line
// retval[:RULE] or argN[:BUCKETS]: FL_BY_VALUE; checked already).
inline uint32_t series_by_bits(const std::vector<std::string>& keys) {
  uint32_t bits = 0;
  for (const auto& key : keys) {
    if (key.starts_with("retval") || key.starts_with("arg")) {
      bits |= kSeriesByValue;
      continue;
    }
    bits |= key == "pid" ? kSeriesByPid : key == "comm" ? kSeriesByComm : kSeriesByCgroup;
  }
  return bits;
}

}  // namespace funclatency
