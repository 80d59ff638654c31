// See slow_thresholds.h: the kernel's per-function slow-call threshold.
#include "collect/slow_thresholds.h"

#include <algorithm>
#include <functional>

namespace funclatency {

SlowThresholds::SlowThresholds(uint32_t num_functions, SlowThresholdOptions options)
    : options_(options), functions_(num_functions) {
  for (auto& function : functions_) function.written = initial();
}

uint64_t SlowThresholds::initial() const {
  if (options_.slower_than_ns) return *options_.slower_than_ns;
  return options_.slowest ? 0 : UINT64_MAX;
}

uint64_t SlowThresholds::wanted(const Function& function) const {
  // Every call over --slower-than is shown, so the threshold stays there.
  if (options_.slower_than_ns || !options_.slowest) return initial();
  if (function.slowest.size() < options_.slowest) return 0;
  return function.slowest.front();
}

uint64_t SlowThresholds::threshold(uint32_t fn_id) const {
  return fn_id < functions_.size() ? wanted(functions_[fn_id]) : initial();
}

void SlowThresholds::note_change(uint32_t fn_id) {
  Function& function = functions_[fn_id];
  const uint64_t now = wanted(function);
  if (now == function.written) return;
  function.written = now;
  if (std::find(changed_.begin(), changed_.end(), fn_id) == changed_.end()) {
    changed_.push_back(fn_id);
  }
}

void SlowThresholds::observe(uint32_t fn_id, uint64_t duration_ns) {
  // --slower-than pins the threshold: the K slowest need no bound then.
  if (fn_id >= functions_.size() || !options_.slowest || options_.slower_than_ns) return;
  auto& heap = functions_[fn_id].slowest;
  if (heap.size() < options_.slowest) {
    heap.push_back(duration_ns);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  } else if (duration_ns > heap.front()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() = duration_ns;
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
  note_change(fn_id);
}

void SlowThresholds::start_interval() {
  for (uint32_t fn = 0; fn < functions_.size(); fn++) {
    functions_[fn].slowest.clear();
    note_change(fn);
  }
}

void SlowThresholds::add_function(uint32_t fn_id) {
  const size_t known = functions_.size();
  if (fn_id < known) return;
  functions_.resize(fn_id + 1);
  for (size_t fn = known; fn < functions_.size(); fn++) functions_[fn].written = initial();
}

std::vector<std::pair<uint32_t, uint64_t>> SlowThresholds::take_changes() {
  std::vector<std::pair<uint32_t, uint64_t>> changes;
  for (uint32_t fn : changed_) changes.emplace_back(fn, functions_[fn].written);
  changed_.clear();
  return changes;
}

}  // namespace funclatency
