// See slow_thresholds.h: which slow calls are among an interval's slowest.
#include "collect/slow_thresholds.h"

#include <algorithm>
#include <functional>

namespace funclatency {

SlowThresholds::SlowThresholds(uint32_t num_functions, SlowThresholdOptions options)
    : options_(options), slowest_(num_functions) {}

uint64_t SlowThresholds::initial() const {
  if (options_.slower_than_ns) return *options_.slower_than_ns;
  return options_.slowest ? 0 : UINT64_MAX;
}

uint64_t SlowThresholds::threshold(uint32_t fn_id) const {
  // Every call over --slower-than is shown, so the threshold stays there.
  if (options_.slower_than_ns || !options_.slowest || fn_id >= slowest_.size()) return initial();
  const auto& heap = slowest_[fn_id];
  return heap.size() < options_.slowest ? 0 : heap.front();
}

void SlowThresholds::observe(uint32_t fn_id, uint64_t duration_ns) {
  // --slower-than pins the threshold: the K slowest need no bound then.
  if (fn_id >= slowest_.size() || !options_.slowest || options_.slower_than_ns) return;
  auto& heap = slowest_[fn_id];
  if (heap.size() < options_.slowest) {
    heap.push_back(duration_ns);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  } else if (duration_ns > heap.front()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() = duration_ns;
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
}

void SlowThresholds::start_interval() {
  for (auto& heap : slowest_) heap.clear();
}

void SlowThresholds::add_function(uint32_t fn_id) {
  if (fn_id >= slowest_.size()) slowest_.resize(fn_id + 1);
}

}  // namespace funclatency
