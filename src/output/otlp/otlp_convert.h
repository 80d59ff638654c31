// Report -> OTLP ExportMetricsServiceRequest: a pure function of the report,
// the options and the exporter's own counters.
//
// Buckets. The tool buckets each call on its duration in the display unit
// (usec by default, -m msec, -n nsec) into fine buckets (LatencyHistogram): one
// per value below 32 units, then 16 equal parts per power-of-two octave. The
// console's log2 rows are exact sums of fine buckets, row 0 = [0, 2) units,
// row r = [2^r, 2^(r+1)) units.
//
// Explicit histogram (default): metric function_latency_ms, unit ms, bounds
// at the log2 row edges of the display unit expressed in ms (2^k * unit_ns /
// 1e6: 2^k us = 2^k/1000 ms by default), so every OTLP bucket count is one
// console row count (LatencyHistogram::log2_counts), with no re-binning,
// whichever unit -u/-m/-n picked. With -m or -n the bounds move with the
// display unit rather than re-binning into microsecond edges, which would
// not be exact: a nanosecond row [2^k, 2^(k+1)) ns straddles microsecond
// edges 1000 * 2^j ns.
//
// Exponential histogram: base = 2^(2^-scale); bucket i covers
// (base^i, base^(i+1)]. A re-binning is exact only when every bucket edge is
// an edge of the tool's fine buckets. Fine-bucket edges are rationals
// (2^o * (16 + j) / 16 units) while at scale >= 1 the exponential edges
// 2^(o + m/2^scale), 0 < m < 2^scale, are irrational, so scale 0 (edges at
// 2^i) is the finest exact scale, and only in a unit where the tool's octaves
// are powers of two: the display unit. In ms that is impossible for usec and
// nsec displays: the edge 2^k us = 2^(k-3)/125 ms is never 2^(i/2^scale) for
// any integer i and scale, since log2(125) is irrational. So the exponential
// histogram is exported in the display unit at scale 0, named
// function_latency_us (unit "us"; function_latency_ns / function_latency_ms
// with -n / -m). Bucket index r >= 1 holds console row r; row 0 is split
// into zero_count (durations under 1 unit, zero_threshold = 1) and index 0
// (durations of 1 unit), which the fine buckets keep apart.
//
// One convention differs in both kinds: OTLP buckets include their upper
// edge, the tool's rows their lower edge; a call lasting exactly 2^k units
// (to the nanosecond) is counted one bucket higher than OTLP's convention
// would put it. Calls of 2^48 units or more (3 days in usec) share the last
// fine bucket and land in the top bucket.
//
// Exemplars (--slowest K): the latency histogram's points carry the slowest
// calls they count (cumulative: FunctionReport::total_slowest, delta:
// interval_slowest), slowest first. as_double is in the point's unit: ms in
// the explicit histogram (like its sum and bounds), the display unit in the
// exponential one. filtered_attributes: process.pid (unless the point already
// has it, --by pid), thread.id, thread.name, and code.stacktrace, the top
// kMaxExemplarFrames frames innermost first, one "symbol+0x1a (/path)" (or
// "0x7f.. (/path)", "0x7f..") per line. No trace or span ids. The CPU split
// histograms carry none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "output/metric_names.h"
#include "output/otlp/otlp_options.h"

namespace funclatency {

namespace otlp_pb {
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse;
}  // namespace otlp_pb

// Facts about this run that are not in a Report (export_context.h gathers
// them from the system, so that the conversion stays a pure function).
struct ExportContext {
  int traced_pid = 0;             // -p PID, else 0
  std::string traced_executable;  // /proc/PID/exe of the traced process, when known
  std::string host_name;
  std::string tool_version;  // scope version
};

// The exporter's own counters, already in the requested temporality
// (cumulative: since the sink started; delta: since the previous request).
struct ExporterHealth {
  uint64_t failed_exports = 0;    // attempts the collector did not accept
  uint64_t dropped_requests = 0;  // requests given up: queue full, rejected, out of retries
};

// Frames of a slow call's stack in an exemplar's code.stacktrace.
inline constexpr size_t kMaxExemplarFrames = 8;

// Metric names (metric_names.h has them all, and the rule): OTLP's is the
// name itself, Prometheus' the same with --prometheus-prefix in front.
inline constexpr std::string_view kLatencyMetricName = metric_names::kLatency;
// --cpu-split: each call's wall time in parts, histograms like the latency one
// (same buckets, attributes, temporality and exponential variant), one point
// per function that has the split.
inline constexpr std::string_view kOncpuMetricName = metric_names::kOncpu;
inline constexpr std::string_view kRunnableMetricName = metric_names::kRunnable;
inline constexpr std::string_view kBlockedMetricName = metric_names::kBlocked;
// --self: each call's exclusive time, a histogram like the latency one (a
// metric of its own, not an attribute of the latency one, so a sum over
// function_latency_ms stays a count of calls).
inline constexpr std::string_view kSelfTimeMetricName = metric_names::kSelfTime;
inline constexpr std::string_view kFunctionLostCallsMetricName = metric_names::kFunctionLostCalls;
inline constexpr std::string_view kRingbufDroppedMetricName = metric_names::kRingbufDroppedCalls;
inline constexpr std::string_view kFailedExportsMetricName = metric_names::kOtlpFailedExports;
inline constexpr std::string_view kDroppedRequestsMetricName = metric_names::kOtlpDroppedRequests;

// "us", "ms", "ns" for the display units the tool has; "1e<k>ns"-style
// names are never needed.
std::string unit_symbol(uint64_t unit_ns);
// Name of the exponential variant of a histogram metric for a display unit:
// function_latency_ms -> function_latency_us with usec.
std::string exponential_metric_name(uint64_t unit_ns,
                                    std::string_view explicit_name = kLatencyMetricName);
// The explicit histogram's upper bounds in ms: edges 2^1 .. 2^(rows-1) of
// the display unit, one fewer than the console has rows.
std::vector<double> explicit_bounds_ms(uint64_t unit_ns);

// Every point carries `symbol` and `binary` (and `pid` with
// --otlp-pid-attribute); with --by, its series' process.pid,
// process.executable.name (comm), cgroup, container.id and k8s.pod.uid where
// set, and series="other" for the calls folded over --max-series.
// container.runtime (docker, containerd, cri-o, podman) where the cgroup's
// name says; with --config, the target's labels (`target` and the file's),
// exported_<name> where a name is one the tool sets itself.
//
// --follow/--config: the agent's self-metrics (self_metrics.h: funclatency_*,
// counters as cumulative monotonic sums whatever the temporality, gauges as
// gauges; `reason` attributes where Prometheus has the label), after the
// others, all of them, as Prometheus has them.
//
// Cumulative: each function's `total`, `total_split` and `total_lost`, start
// = run_start. Delta: `interval`, `interval_split` and `interval_lost`, start
// = interval_start (OtlpSink fills them with the change since its previous
// export). min and max are
// left out where the histogram does not know them.
otlp_pb::ExportMetricsServiceRequest build_export_request(const Report& report,
                                                          const OtlpOptions& options,
                                                          const ExportContext& context,
                                                          const ExporterHealth& health);

}  // namespace funclatency
