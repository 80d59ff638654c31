// How a function's durations are aggregated right now: a ring buffer record
// per call, or buckets counted in the kernel. Collect switches it, reports
// carry it, and only the sinks turn it into text.
#pragma once

namespace funclatency {

enum class AggregationMode {
  kEvents,  // one ring buffer record per call
  kKernel,  // per-CPU buckets aggregated in the kernel
  kMixed,   // a report group (--merge) whose functions are in different modes
};

}  // namespace funclatency
