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

// Keys per batch: bounds the copy buffer (a histogram entry is ~6 KB per CPU).
constexpr uint32_t kStatsBatch = 32;
constexpr uint32_t kLostBatch = 1024;

void add_cpu_stats(KernelTotals& totals, const fl_fn_stats& stats) {
  if (stats.count == 0) return;
  totals.count += stats.count;
  totals.sum_ns += stats.sum_ns;
  if (stats.min_ns != 0 && (totals.min_ns == 0 || stats.min_ns < totals.min_ns)) {
    totals.min_ns = stats.min_ns;
  }
  totals.max_ns = std::max<uint64_t>(totals.max_ns, stats.max_ns);
  for (size_t i = 0; i < totals.buckets.size(); i++) totals.buckets[i] += stats.buckets[i];
}

KernelTotals sum_stats(std::span<const uint8_t> per_cpu, int num_cpus) {
  KernelTotals totals;
  for (int cpu = 0; cpu < num_cpus; cpu++) {
    fl_fn_stats stats;
    std::memcpy(&stats, per_cpu.data() + cpu * stride_of(sizeof(fl_fn_stats)), sizeof(stats));
    add_cpu_stats(totals, stats);
  }
  return totals;
}

LostCounts sum_lost(std::span<const uint8_t> per_cpu, int num_cpus) {
  LostCounts lost;
  for (int cpu = 0; cpu < num_cpus; cpu++) {
    fl_fn_lost counts;
    std::memcpy(&counts, per_cpu.data() + cpu * stride_of(sizeof(fl_fn_lost)), sizeof(counts));
    lost.unreturned += counts.unreturned;
    lost.depth += counts.depth;
    lost.ringbuf += counts.ringbuf;
    lost.split_unknown += counts.split_unknown;
    lost.slow_dropped += counts.slow_dropped;
  }
  return lost;
}
}  // namespace

MapReader::MapReader(int fn_stats_fd, int fn_lost_fd, uint32_t num_functions)
    : fn_stats_fd_(fn_stats_fd),
      fn_lost_fd_(fn_lost_fd),
      num_functions_(num_functions),
      num_cpus_(std::max(libbpf_num_possible_cpus(), 1)) {}

Result<void> MapReader::for_each_entry(
    int fd, const char* what, size_t value_size, uint32_t batch,
    const std::function<void(uint32_t, std::span<const uint8_t>)>& visit) {
  const size_t per_key = stride_of(value_size) * num_cpus_;
  buffer_.resize(per_key * batch);
  keys_.resize(batch);
  uint32_t next = 0;
  bool first = true;
  while (true) {
    uint32_t count = batch;
    int rc = bpf_map_lookup_batch(fd, first ? nullptr : &next, &next, keys_.data(), buffer_.data(),
                                  &count, nullptr);
    // ENOENT: the last batch (possibly with entries) or nothing left.
    if (rc < 0 && errno != ENOENT) return runtime_error(what, errno);
    for (uint32_t i = 0; i < count; i++) {
      visit(keys_[i], std::span<const uint8_t>(buffer_.data() + i * per_key, per_key));
    }
    if (rc < 0 || count == 0) return {};
    first = false;
  }
}

Result<KernelTotals> MapReader::read_totals(uint32_t fn_id) {
  buffer_.resize(stride_of(sizeof(fl_fn_stats)) * num_cpus_);
  if (bpf_map_lookup_elem(fn_stats_fd_, &fn_id, buffer_.data()) < 0) {
    return runtime_error(fmt::format("read kernel histogram of function {}", fn_id), errno);
  }
  return sum_stats(buffer_, num_cpus_);
}

Result<void> MapReader::read_totals(
    const std::vector<bool>& wanted,
    const std::function<void(uint32_t, const KernelTotals&)>& visit) {
  if (std::none_of(wanted.begin(), wanted.end(), [](bool w) { return w; })) return {};
  return for_each_entry(fn_stats_fd_, "read kernel histograms", sizeof(fl_fn_stats), kStatsBatch,
                        [&](uint32_t fn_id, std::span<const uint8_t> per_cpu) {
                          if (fn_id < wanted.size() && wanted[fn_id]) {
                            visit(fn_id, sum_stats(per_cpu, num_cpus_));
                          }
                        });
}

Result<void> MapReader::read_series(
    int series_stats_fd,
    const std::function<void(const fl_series_key&, const KernelTotals&)>& visit) {
  fl_series_key key{}, next{};
  const fl_series_key* previous = nullptr;
  while (bpf_map_get_next_key(series_stats_fd, previous, &next) == 0) {
    key = next;
    previous = &key;
    // A series deleted meanwhile (its process exited) is skipped.
    fl_fn_stats stats;
    if (bpf_map_lookup_elem(series_stats_fd, &key, &stats) < 0) continue;
    KernelTotals totals;
    add_cpu_stats(totals, stats);
    visit(key, totals);
  }
  if (errno != ENOENT) return runtime_error("read the kernel histograms of series", errno);
  return {};
}

std::optional<KernelTotals> take_series_entry(int series_stats_fd, const fl_series_key& key) {
  fl_fn_stats stats{};
  if (bpf_map_lookup_and_delete_elem(series_stats_fd, &key, &stats) < 0) return std::nullopt;
  KernelTotals totals;
  add_cpu_stats(totals, stats);
  return totals;
}

Result<std::vector<LostCounts>> MapReader::read_all_lost() {
  std::vector<LostCounts> lost(num_functions_);
  auto ok = for_each_entry(fn_lost_fd_, "read lost-call counters", sizeof(fl_fn_lost), kLostBatch,
                           [&](uint32_t fn_id, std::span<const uint8_t> per_cpu) {
                             if (fn_id < lost.size()) lost[fn_id] = sum_lost(per_cpu, num_cpus_);
                           });
  if (!ok) return std::unexpected(ok.error());
  return lost;
}

}  // namespace funclatency
