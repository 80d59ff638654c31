// Reads the kernel's cumulative per-CPU counters and sums the CPUs. Never
// writes the maps: probes write them concurrently (take_series_entry, for a
// series that ended, is the one exception).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "collect/aggregator.h"
#include "common/error.h"

namespace funclatency {

class MapReader {
 public:
  MapReader(int fn_stats_fd, int fn_lost_fd, uint32_t num_functions);
  Result<KernelTotals> read_totals(uint32_t fn_id);
  // Totals of every function `wanted` marks, handed to `visit` in id order.
  // A few syscalls for all of them: one lookup per function costs tens of
  // milliseconds with a thousand functions.
  Result<void> read_totals(const std::vector<bool>& wanted,
                           const std::function<void(uint32_t, const KernelTotals&)>& visit);
  // Every function's lost-call counters, indexed by function id.
  Result<std::vector<LostCounts>> read_all_lost();
  // --by in kernel mode: every series' totals in a hash keyed by
  // fl_series_key, one value for all CPUs (series come and go: one key at a
  // time).
  Result<void> read_series(
      int series_stats_fd,
      const std::function<void(const fl_series_key&, const KernelTotals&)>& visit);

 private:
  // Hands `visit` every entry of a per-CPU array map as its raw per-CPU
  // values, `batch` keys per syscall.
  Result<void> for_each_entry(int fd, const char* what, size_t value_size, uint32_t batch,
                              const std::function<void(uint32_t, std::span<const uint8_t>)>& visit);

  int fn_stats_fd_;
  int fn_lost_fd_;
  uint32_t num_functions_;
  int num_cpus_;
  std::vector<uint8_t> buffer_;
  std::vector<uint32_t> keys_;
};

// --by in kernel mode: takes a series that ended out of series_stats, with
// its totals at that instant (nothing when the entry is not there).
std::optional<KernelTotals> take_series_entry(int series_stats_fd, const fl_series_key& key);

}  // namespace funclatency
