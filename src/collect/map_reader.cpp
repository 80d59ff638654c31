#include "collect/map_reader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace funclatency {

namespace {
// Per-CPU values are laid out at 8-byte strides, one per possible CPU.
constexpr size_t stride_of(size_t size) {
  return (size + 7) & ~size_t{7};
}
}  // namespace

MapReader::MapReader(int fn_stats_fd, int fn_lost_fd)
    : fn_stats_fd_(fn_stats_fd), fn_lost_fd_(fn_lost_fd), num_cpus_(libbpf_num_possible_cpus()) {
  if (num_cpus_ < 1) num_cpus_ = 1;
  buffer_.resize(stride_of(std::max(sizeof(fl_fn_stats), sizeof(fl_fn_lost))) * num_cpus_);
}

Result<KernelTotals> MapReader::read_totals(uint32_t fn_id) {
  if (bpf_map_lookup_elem(fn_stats_fd_, &fn_id, buffer_.data()) < 0) {
    return runtime_error(fmt::format("read kernel histogram of function {}", fn_id), errno);
  }
  KernelTotals totals;
  for (int cpu = 0; cpu < num_cpus_; cpu++) {
    fl_fn_stats stats;
    std::memcpy(&stats, buffer_.data() + cpu * stride_of(sizeof(fl_fn_stats)), sizeof(stats));
    if (stats.count == 0) continue;
    totals.count += stats.count;
    totals.sum_ns += stats.sum_ns;
    if (stats.min_ns != 0 && (totals.min_ns == 0 || stats.min_ns < totals.min_ns)) {
      totals.min_ns = stats.min_ns;
    }
    totals.max_ns = std::max<uint64_t>(totals.max_ns, stats.max_ns);
    for (size_t i = 0; i < totals.buckets.size(); i++) totals.buckets[i] += stats.buckets[i];
  }
  return totals;
}

Result<LostCounts> MapReader::read_lost(uint32_t fn_id) {
  if (bpf_map_lookup_elem(fn_lost_fd_, &fn_id, buffer_.data()) < 0) {
    return runtime_error(fmt::format("read lost-call counters of function {}", fn_id), errno);
  }
  LostCounts lost;
  for (int cpu = 0; cpu < num_cpus_; cpu++) {
    fl_fn_lost counts;
    std::memcpy(&counts, buffer_.data() + cpu * stride_of(sizeof(fl_fn_lost)), sizeof(counts));
    lost.unreturned += counts.unreturned;
    lost.depth += counts.depth;
    lost.ringbuf += counts.ringbuf;
  }
  return lost;
}

}  // namespace funclatency
