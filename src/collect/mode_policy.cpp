#include "collect/mode_policy.h"

#include <fmt/format.h>

namespace funclatency {

ModePolicy::ModePolicy(uint32_t num_functions, ModePolicyOptions options)
    : options_(options), in_kernel_(num_functions, false), calm_seconds_(num_functions, 0.0) {}

std::vector<ModeSwitch> ModePolicy::observe(const std::vector<uint64_t>& calls,
                                            const std::vector<uint64_t>& ringbuf_lost,
                                            double seconds) {
  std::vector<ModeSwitch> switches;
  if (seconds <= 0) return switches;
  for (uint32_t fn = 0; fn < in_kernel_.size(); fn++) {
    double rate = calls[fn] / seconds;
    if (!in_kernel_[fn]) {
      if (ringbuf_lost[fn] > 0) {
        switches.push_back({fn, true, fmt::format("{} records lost", ringbuf_lost[fn])});
      } else if (rate > options_.to_kernel_calls_per_sec) {
        switches.push_back(
            {fn, true,
             fmt::format("{:.0f} calls/s > {:.0f}", rate, options_.to_kernel_calls_per_sec)});
      } else {
        continue;
      }
      in_kernel_[fn] = true;
      calm_seconds_[fn] = 0;
      continue;
    }
    if (rate >= options_.to_events_calls_per_sec) {
      calm_seconds_[fn] = 0;
      continue;
    }
    calm_seconds_[fn] += seconds;
    if (calm_seconds_[fn] >= options_.seconds_calm_before_events) {
      switches.push_back({fn, false,
                          fmt::format("{:.0f} calls/s < {:.0f} for {:.1f}s", rate,
                                      options_.to_events_calls_per_sec, calm_seconds_[fn])});
      in_kernel_[fn] = false;
      calm_seconds_[fn] = 0;
    }
  }
  return switches;
}

}  // namespace funclatency
