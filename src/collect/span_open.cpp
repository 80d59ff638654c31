// Why: see span_open.h.
#include "collect/span_open.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <vector>

#include "bpf/funclatency.h"
#include "collect/hash_keys.h"

namespace funclatency {

Result<std::map<uint32_t, uint64_t>> take_open_spans(
    int open_spans_fd, const std::function<bool(uint32_t tgid)>& take) {
  return count_keys_of_processes<fl_span_key>(
      open_spans_fd, take, "open spans (open_spans)",
      [&](const fl_span_key& gone, std::map<uint32_t, uint64_t>& open) -> Result<void> {
        // Counted once: deleted here, or (ENOENT) its end came meanwhile.
        if (bpf_map_delete_elem(open_spans_fd, &gone) == 0) {
          open[gone.fn_id]++;
        } else if (errno != ENOENT) {
          return runtime_error("delete an open span", errno);
        }
        return {};
      });
}

Result<std::vector<LostCounts>> read_span_lost(int span_lost_fd, uint32_t spans) {
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return runtime_error("count the possible CPUs", -cpus);
  std::vector<fl_span_lost> per_cpu(static_cast<size_t>(cpus));
  std::vector<LostCounts> lost(spans);
  for (uint32_t index = 0; index < spans; index++) {
    if (bpf_map_lookup_elem(span_lost_fd, &index, per_cpu.data()) != 0) {
      return runtime_error("read the spans' lost counts (span_lost)", errno);
    }
    for (const fl_span_lost& cpu : per_cpu) {
      lost[index].span_reused += cpu.reused;
      lost[index].span_full += cpu.full;
      lost[index].span_unstarted += cpu.unstarted;
    }
  }
  return lost;
}

}  // namespace funclatency
