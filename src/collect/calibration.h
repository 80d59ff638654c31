// What the probes themselves add to a measured duration, measured on this
// machine: the apparent latency of empty functions traced the way real ones
// are (entry instruction emulated or single-stepped; exit by return probe or
// by ret-instruction probe).
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"
#include "probe/probe_plan.h"

namespace funclatency {

struct Calibration {
  // Median apparent duration of an empty function, ns,
  // [entry emulated][exit on ret instructions].
  uint64_t median_ns[2][2] = {};
  uint64_t calls_per_case = 0;

  uint64_t for_plan(const ProbePlan& plan) const {
    return median_ns[plan.entry_emulated ? 1 : 0][plan.use_ret_instructions ? 1 : 0];
  }
};

// Traces empty functions of funclatency's own binary in this process.
Result<Calibration> calibrate(uint64_t calls_per_case = 3000);
std::string format_calibration(const Calibration& calibration);

}  // namespace funclatency
