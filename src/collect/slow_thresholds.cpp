// See slow_thresholds.h: which slow calls are among an interval's slowest.
#include "collect/slow_thresholds.h"

#include <algorithm>
#include <functional>

namespace funclatency {
namespace {

uint64_t threshold_of(const SlowThresholdOptions& options) {
  if (options.slower_than_ns) return *options.slower_than_ns;
  return options.slowest ? 0 : UINT64_MAX;
}

}  // namespace

FunctionSlowCalls slow_calls_for(const SlowThresholdOptions& options) {
  return {.slow_ns = threshold_of(options),
          .slowest_k = options.slower_than_ns ? 0 : static_cast<uint32_t>(options.slowest)};
}

SlowThresholdOptions slow_options_of(const FunctionSlowCalls& slow) {
  SlowThresholdOptions options{.slowest = slow.slowest_k};
  if (slow.slowest_k == 0 && slow.slow_ns != UINT64_MAX) options.slower_than_ns = slow.slow_ns;
  return options;
}

SlowThresholds::SlowThresholds(uint32_t num_functions, SlowThresholdOptions options)
    : options_(options), functions_(num_functions, Function{options, {}}) {}

uint64_t SlowThresholds::initial() const {
  return threshold_of(options_);
}

const SlowThresholdOptions& SlowThresholds::options_of(uint32_t fn_id) const {
  return fn_id < functions_.size() ? functions_[fn_id].options : options_;
}

uint64_t SlowThresholds::threshold(uint32_t fn_id) const {
  if (fn_id >= functions_.size()) return initial();
  const Function& function = functions_[fn_id];
  // Every call over --slower-than is shown, so the threshold stays there.
  if (function.options.slower_than_ns || !function.options.slowest) {
    return threshold_of(function.options);
  }
  return function.slowest.size() < function.options.slowest ? 0 : function.slowest.front();
}

void SlowThresholds::observe(uint32_t fn_id, uint64_t duration_ns) {
  if (fn_id >= functions_.size()) return;
  Function& function = functions_[fn_id];
  // --slower-than pins the threshold: the K slowest need no bound then.
  const size_t k = function.options.slowest;
  if (!k || function.options.slower_than_ns) return;
  auto& heap = function.slowest;
  if (heap.size() < k) {
    heap.push_back(duration_ns);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  } else if (duration_ns > heap.front()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() = duration_ns;
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
}

void SlowThresholds::start_interval() {
  for (auto& function : functions_) function.slowest.clear();
}

void SlowThresholds::add_function(uint32_t fn_id) {
  if (fn_id >= functions_.size()) functions_.resize(fn_id + 1, Function{options_, {}});
}

void SlowThresholds::set_function(uint32_t fn_id, SlowThresholdOptions options) {
  add_function(fn_id);
  functions_[fn_id].options = options;
  functions_[fn_id].slowest.clear();
}

}  // namespace funclatency
