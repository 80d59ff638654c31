// A report of the agent (--follow/--config) with every field of AgentStatus,
// a target's labels and a container runtime set to values that tell them
// apart, for the tests of each sink and exporter.
#pragma once

#include <chrono>
#include <utility>

#include "model/report.h"

namespace funclatency::testing {

// Two followed functions: slow_op of target "checkout" (labels service and
// team) in a podman container, and fast_op of target "search" (label
// service only). Lost calls: 3+1 unreturned, 1 depth, 2 ringbuf.
inline Report agent_report() {
  using namespace std::chrono_literals;
  Report report;
  report.run_start = std::chrono::system_clock::time_point(1'700'000'000s);
  report.interval_start = report.run_start + 10s;
  report.time = report.run_start + 11s;
  auto function = [](std::string symbol, std::initializer_list<uint64_t> durations_ns) {
    FunctionReport f;
    f.symbol = std::move(symbol);
    f.binary = "/app/prog";
    f.total = LatencyHistogram(1000);
    f.interval = LatencyHistogram(1000);
    for (uint64_t ns : durations_ns) f.total.record(ns);
    return f;
  };
  FunctionReport slow_op = function("slow_op", {1000, 250'000});
  slow_op.series = {
      .cgroup =
          "/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789ab"
          "cdef0123456789abcdef.scope",
      .container_id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      .runtime = "podman"};
  slow_op.labels = {{"target", "checkout"}, {"service", "cart"}, {"team", "pay\"ments"}};
  slow_op.total_lost = {.unreturned = 3, .depth = 1, .ringbuf = 2};
  FunctionReport fast_op = function("fast_op", {500});
  fast_op.series = {.cgroup = "/user.slice"};
  fast_op.labels = {{"target", "search"}, {"service", "find"}};
  fast_op.total_lost = {.unreturned = 1};
  report.functions = {slow_op, fast_op};
  report.ringbuf_dropped_total = 2;
  report.series_folded = 5;
  report.series_expired = 8;
  report.agent =
      AgentStatus{.config_last_reload_successful = false,
                  .config_reload_failures = 4,
                  .functions_attached = 2,
                  .files_attached = 3,
                  .processes_seen = 1234,
                  .exec_dropped = 6,
                  .attach_failures = {{"no_function", 7}, {"no_room", 0}, {"kernel_refused", 1}},
                  .probe_cpu_seconds = 0.125,
                  .kernel_memory_bytes = 4096};
  return report;
}

}  // namespace funclatency::testing
