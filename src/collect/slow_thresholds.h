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

#include "probe/bpf_object.h"

namespace funclatency {

struct SlowThresholdOptions {
  size_t slowest = 0;                      // --slowest K; 0: off
  std::optional<uint64_t> slower_than_ns;  // --slower-than
  bool any() const { return slowest > 0 || slower_than_ns.has_value(); }
  bool operator==(const SlowThresholdOptions&) const = default;
};

// What the probes of a function are given for these options, and back (a
// function's options are kept with the BPF object, the one place that has
// every function's). --slower-than pins the threshold: no floor then.
FunctionSlowCalls slow_calls_for(const SlowThresholdOptions& options);
SlowThresholdOptions slow_options_of(const FunctionSlowCalls& slow);

class SlowThresholds {
 public:
  SlowThresholds(uint32_t num_functions, SlowThresholdOptions options);

  // What the kernel's threshold is for the run's options (UINT64_MAX when
  // neither option is set).
  uint64_t initial() const;
  // A call of fn_id the probes sent, as its record arrived.
  void observe(uint32_t fn_id, uint64_t duration_ns);
  // A new interval: the kept durations go.
  void start_interval();
  // A function attached later (ids grow): the run's options, or its own.
  void add_function(uint32_t fn_id);
  void set_function(uint32_t fn_id, SlowThresholdOptions options);
  const SlowThresholdOptions& options_of(uint32_t fn_id) const;
  // A call of fn_id shorter than this is not among the interval's K slowest
  // of those observed so far.
  uint64_t threshold(uint32_t fn_id) const;

 private:
  struct Function {
    SlowThresholdOptions options;
    std::vector<uint64_t> slowest;  // min-heap of the interval's K slowest
  };
  SlowThresholdOptions options_;  // the run's
  std::vector<Function> functions_;
};

}  // namespace funclatency
