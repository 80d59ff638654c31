// Reads the kernel's cumulative per-CPU counters and sums the CPUs. Never
// writes the maps: probes write them concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "collect/aggregator.h"
#include "common/error.h"

namespace funclatency {

class MapReader {
 public:
  MapReader(int fn_stats_fd, int fn_lost_fd);
  Result<KernelTotals> read_totals(uint32_t fn_id);
  Result<LostCounts> read_lost(uint32_t fn_id);

 private:
  int fn_stats_fd_;
  int fn_lost_fd_;
  int num_cpus_;
  std::vector<uint8_t> buffer_;
};

}  // namespace funclatency
