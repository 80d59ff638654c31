// --slowest K / --slower-than: which of the slow calls the probes sent are
// kept. With --slowest the probes send every call at or over their own
// per-interval floor (fl_slow_floor: at most the interval's K-th slowest, so
// the K slowest are always sent); this keeps the K slowest of what arrived,
// and each interval starts from nothing, so every interval has its K slowest.
// The floor lives in the kernel only: a threshold written from here would be
// an interval late at each switch (a call of the new interval judged by the
// old one's K-th slowest). With --slower-than the threshold is that duration,
// set once at load: every call over it is shown as it ends. Pure.
#pragma once

#include <cstdint>
#include <optional>
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

  // What the kernel's per-function threshold is (UINT64_MAX when neither
  // option is set).
  uint64_t initial() const;
  // A call of fn_id the probes sent, as its record arrived.
  void observe(uint32_t fn_id, uint64_t duration_ns);
  // A new interval: the kept durations go.
  void start_interval();
  // A function attached later (ids grow).
  void add_function(uint32_t fn_id);
  // A call of fn_id shorter than this is not among the interval's K slowest
  // of those observed so far.
  uint64_t threshold(uint32_t fn_id) const;

 private:
  SlowThresholdOptions options_;
  std::vector<std::vector<uint64_t>> slowest_;  // per function: min-heap of the K slowest
};

}  // namespace funclatency
