// --slowest K / --slower-than: the per-function threshold above which the
// probes send a call with its stack. Kernel mode must not send a record per
// call, so the threshold follows the K-th slowest call seen this interval
// (every call at or over it is sent, so the K slowest always are); each
// interval starts from nothing, so every interval has its K slowest (the
// probes' own floor, fl_slow_floor, cuts the burst until this one rises).
// With --slower-than the threshold is that duration: every call over it is
// shown as it ends. Pure: the session writes the changes to the kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace funclatency {

struct SlowThresholdOptions {
  size_t slowest = 0;                      // --slowest K; 0: off
  std::optional<uint64_t> slower_than_ns;  // --slower-than
  bool any() const { return slowest > 0 || slower_than_ns.has_value(); }
};

class SlowThresholds {
 public:
  SlowThresholds(uint32_t num_functions, SlowThresholdOptions options);

  // What every function starts at (UINT64_MAX when neither option is set).
  uint64_t initial() const;
  // A call of fn_id over its threshold, as its record arrived.
  void observe(uint32_t fn_id, uint64_t duration_ns);
  // A new interval: the kept durations go, thresholds start from 0.
  void start_interval();
  // A function attached later (ids grow).
  void add_function(uint32_t fn_id);
  // Thresholds that changed since the last call, as (function, ns).
  std::vector<std::pair<uint32_t, uint64_t>> take_changes();
  uint64_t threshold(uint32_t fn_id) const;

 private:
  struct Function {
    std::vector<uint64_t> slowest;  // min-heap of the interval's K slowest
    uint64_t written = 0;           // what the kernel has
  };
  uint64_t wanted(const Function& function) const;
  void note_change(uint32_t fn_id);

  SlowThresholdOptions options_;
  std::vector<Function> functions_;
  std::vector<uint32_t> changed_;
};

}  // namespace funclatency
