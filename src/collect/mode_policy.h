// Auto mode: per-call events while a function's rate is modest (cheap enough,
// and nothing to configure), in-kernel aggregation once it is hot or events
// are being lost. Pure: fed rates, answers with switches, so it is testable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace funclatency {

struct ModePolicyOptions {
  double to_kernel_calls_per_sec = 10000;   // switch a function to kernel above this
  double to_events_calls_per_sec = 2500;    // and back below this...
  double seconds_calm_before_events = 2.0;  // ...sustained this long
};

struct ModeSwitch {
  uint32_t fn_id = 0;
  bool to_kernel = false;
  std::string reason;
};

class ModePolicy {
 public:
  ModePolicy(uint32_t num_functions, ModePolicyOptions options);
  // One observation window per function: calls completed and records lost
  // over `seconds`. Returns the switches to make now.
  std::vector<ModeSwitch> observe(const std::vector<uint64_t>& calls,
                                  const std::vector<uint64_t>& ringbuf_lost, double seconds);
  bool in_kernel(uint32_t fn_id) const { return in_kernel_[fn_id]; }
  // A switch the policy asked for could not be made (no kernel slot free):
  // the function stays where it was, and is asked about again next window.
  void refused(const ModeSwitch& change) { in_kernel_[change.fn_id] = !change.to_kernel; }

 private:
  ModePolicyOptions options_;
  std::vector<bool> in_kernel_;
  std::vector<double> calm_seconds_;
};

}  // namespace funclatency
