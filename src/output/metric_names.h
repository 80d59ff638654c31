// The names of everything the exporters export, and the one rule that turns
// a name into Prometheus' or OTLP's: both exporters take their metric names
// and label/attribute names from here, so the same count never has two names.
//
// The rule.
// - Every metric has one name, `name` below: the family, without `_total`,
//   with its unit in the name where it has one (`_ms`, `_seconds`).
// - What the traced functions did is `function_*` (and the run's
//   `ringbuf_dropped_calls`): Prometheus writes `<prefix>_<name>`
//   (--prometheus-prefix, `ebpf` by default), OTLP writes `<name>`; a
//   collector's `prometheus` exporter with `namespace: ebpf` gives back the
//   Prometheus name.
// - What the tool says of itself is `funclatency_*`, the same in both and
//   never prefixed (as Prometheus' own are prometheus_*).
// - A counter's Prometheus sample adds `_total` (text 0.0.4 and OpenMetrics
//   alike); OTLP sends a monotonic sum named `<name>`, to which Prometheus'
//   OTLP translation adds `_total` back.
// - Labels and attributes: OTLP uses OpenTelemetry's semantic conventions
//   where they have a name (process.pid, container.id...), Prometheus a
//   label of its own naming; the pairs below. Resource attributes
//   (service.name, host.name...) are OTLP's alone.
// The seed names `function_latency_ms` / `ebpf_function_latency_ms` predate
// the rule and fit it.
#pragma once

#include <string>
#include <string_view>

namespace funclatency::metric_names {

// What the traced functions did: Prometheus prefixes these.
inline constexpr std::string_view kLatency = "function_latency_ms";
inline constexpr std::string_view kOncpu = "function_oncpu_ms";         // --cpu-split
inline constexpr std::string_view kRunnable = "function_runnable_ms";   // --cpu-split
inline constexpr std::string_view kBlocked = "function_blocked_ms";     // --cpu-split
inline constexpr std::string_view kSelfTime = "function_self_time_ms";  // --self
inline constexpr std::string_view kFunctionLostCalls = "function_lost_calls";
// --span: a span's durations (its losses are function_lost_calls' with the
// reasons reused, full, open).
inline constexpr std::string_view kSpanLatency = "function_span_ms";
inline constexpr std::string_view kRingbufDroppedCalls = "ringbuf_dropped_calls";

// What the tool says of itself: funclatency_*, never prefixed.
inline constexpr std::string_view kToolPrefix = "funclatency_";
// --follow/--config (self_metrics.h)
inline constexpr std::string_view kConfigLastReloadSuccessful =
    "funclatency_config_last_reload_successful";
inline constexpr std::string_view kConfigReloadFailures = "funclatency_config_reload_failures";
inline constexpr std::string_view kAttachedFunctions = "funclatency_attached_functions";
inline constexpr std::string_view kAttachedFiles = "funclatency_attached_files";
inline constexpr std::string_view kAttachFailures = "funclatency_attach_failures";
inline constexpr std::string_view kExecEvents = "funclatency_exec_events";
inline constexpr std::string_view kExecDropped = "funclatency_exec_dropped";
inline constexpr std::string_view kAgentLostCalls = "funclatency_lost_calls";
inline constexpr std::string_view kAgentRingbufDropped = "funclatency_ringbuf_dropped";
inline constexpr std::string_view kSeriesFolded = "funclatency_series_folded";
inline constexpr std::string_view kSeriesExpired = "funclatency_series_expired";
inline constexpr std::string_view kProbeCpuSeconds = "funclatency_probe_cpu_seconds";
inline constexpr std::string_view kKernelMemory = "funclatency_kernel_memory_bytes";
// The OTLP exporter's own health (OTLP only: Prometheus scrapes, it has no
// failed exports).
inline constexpr std::string_view kOtlpFailedExports = "funclatency_otlp_failed_exports";
inline constexpr std::string_view kOtlpDroppedRequests = "funclatency_otlp_dropped_requests";

// A counter's Prometheus sample name is its family's plus this.
inline constexpr std::string_view kCounterSuffix = "_total";

// The Prometheus family of `name`: `<prefix>_<name>`, or `name` itself for
// the tool's own metrics and with an empty prefix.
inline std::string prometheus_family(std::string_view name, std::string_view prefix) {
  if (prefix.empty() || name.starts_with(kToolPrefix)) return std::string(name);
  return std::string(prefix) + "_" + std::string(name);
}

// One label as each exporter names it.
struct AttributeName {
  std::string_view prometheus;
  std::string_view otlp;
};

// The labels of a series, as (constant, Prometheus' name, OTLP's name): the
// one list both the constants and kAttributes (every pair, for tests and docs
// to walk) are made from, so a label is written once.
#define FL_SERIES_ATTRIBUTES(X)                                                    \
  X(kSymbol, "symbol", "symbol")                                                   \
  X(kBinary, "binary", "binary")                                                   \
  /* -p PID (OTLP: with --otlp-pid-attribute). */                                  \
  X(kPid, "pid", "pid")                                                            \
  /* --by: the series' own. Prometheus has one `pid` label for -p and --by pid. */ \
  X(kSeriesPid, "pid", "process.pid")                                              \
  X(kComm, "comm", "process.executable.name")                                      \
  X(kCgroup, "cgroup", "cgroup")                                                   \
  X(kContainerId, "container_id", "container.id")                                  \
  X(kPodUid, "pod_uid", "k8s.pod.uid")                                             \
  /* "other": over --max-series */                                                 \
  X(kSeries, "series", "series")                                                   \
  X(kContainerRuntime, "container_runtime", "container.runtime")                   \
  /* --by retval[:RULE] / argN[:BUCKETS]: the call's outcome class, or its */      \
  /* argument's bucket and which argument it is. */                                \
  X(kRetval, "retval", "retval")                                                   \
  X(kArg, "arg", "arg")                                                            \
  X(kArgIndex, "arg_index", "arg.index")                                           \
  /* --span: a span's name, where a function's series has `symbol`. */             \
  X(kSpan, "span", "span")                                                         \
  /* Lost calls and attach failures, by reason. */                                 \
  X(kReason, "reason", "reason")
#define FL_ATTRIBUTE_CONSTANT(constant, prometheus, otlp) \
  inline constexpr AttributeName constant{prometheus, otlp};
#define FL_ATTRIBUTE_ELEMENT(constant, prometheus, otlp) constant,
FL_SERIES_ATTRIBUTES(FL_ATTRIBUTE_CONSTANT)
inline constexpr AttributeName kAttributes[] = {FL_SERIES_ATTRIBUTES(FL_ATTRIBUTE_ELEMENT)};
#undef FL_ATTRIBUTE_ELEMENT
#undef FL_ATTRIBUTE_CONSTANT
#undef FL_SERIES_ATTRIBUTES

// --slowest: a slow call's exemplar. OTLP's also carry thread.name; its
// code.stacktrace is the top frames, Prometheus' frame the innermost one.
inline constexpr AttributeName kExemplarPid{"pid", "process.pid"};
inline constexpr AttributeName kExemplarTid{"tid", "thread.id"};
inline constexpr AttributeName kExemplarStack{"frame", "code.stacktrace"};

}  // namespace funclatency::metric_names
