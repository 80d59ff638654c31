// Report -> OTLP request (see otlp_convert.h): the protobuf messages are the
// generated classes of proto/, filled here and nowhere else.
#include "output/otlp/otlp_convert.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <tuple>
#include <utility>

#include "common/names_table.h"
#include "common/utf8.h"
#include "output/self_metrics.h"

namespace funclatency {
namespace {

namespace common_pb = opentelemetry::proto::common::v1;
namespace metrics_pb = opentelemetry::proto::metrics::v1;
namespace names = metric_names;

constexpr double kNsPerMs = 1e6;

uint64_t unix_nanos(std::chrono::system_clock::time_point time) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

void add_attribute(google::protobuf::RepeatedPtrField<common_pb::KeyValue>* attributes,
                   std::string_view key, const std::string& value) {
  auto* attribute = attributes->Add();
  // proto3 strings must be UTF-8, or the collector rejects the request.
  attribute->set_key(to_valid_utf8(std::string(key)));
  attribute->mutable_value()->set_string_value(to_valid_utf8(value));
}

void add_attribute(google::protobuf::RepeatedPtrField<common_pb::KeyValue>* attributes,
                   std::string_view key, int64_t value) {
  auto* attribute = attributes->Add();
  attribute->set_key(std::string(key));
  attribute->mutable_value()->set_int_value(value);
}

// Every attribute key a point gets from the tool itself; a --config label of
// one of these names is renamed (exported_labels).
constexpr std::string_view kOwnAttributeNames[] = {
    names::kSymbol.otlp,      names::kBinary.otlp,  names::kPid.otlp,
    names::kSeriesPid.otlp,   names::kComm.otlp,    names::kCgroup.otlp,
    names::kContainerId.otlp, names::kPodUid.otlp,  names::kContainerRuntime.otlp,
    names::kSeries.otlp,      names::kReason.otlp,  names::kRetval.otlp,
    names::kArg.otlp,         names::kArgIndex.otlp};

void add_function_attributes(google::protobuf::RepeatedPtrField<common_pb::KeyValue>* attributes,
                             const FunctionReport& function, const OtlpOptions& options) {
  // A span is named by its `span` attribute where a function has `symbol`.
  add_attribute(attributes, function.span ? names::kSpan.otlp : names::kSymbol.otlp,
                function.symbol);
  add_attribute(attributes, names::kBinary.otlp, function.binary);
  if (options.pid_attribute && function.pid != 0) {
    add_attribute(attributes, names::kPid.otlp, function.pid);
  }
  // --by: the series, as point attributes (one exporter reports many
  // processes, so they cannot be resource attributes), named by the
  // semantic conventions where they have a name.
  const SeriesLabels& series = function.series;
  if (series.pid) add_attribute(attributes, names::kSeriesPid.otlp, int64_t{*series.pid});
  for (const auto& [key, value] :
       {std::pair{names::kComm.otlp, &series.comm}, std::pair{names::kCgroup.otlp, &series.cgroup},
        std::pair{names::kContainerId.otlp, &series.container_id},
        std::pair{names::kPodUid.otlp, &series.pod_uid},
        std::pair{names::kRetval.otlp, &series.retval}, std::pair{names::kArg.otlp, &series.arg}}) {
    if (*value) add_attribute(attributes, key, **value);
  }
  if (series.arg_index)
    add_attribute(attributes, names::kArgIndex.otlp, int64_t{*series.arg_index});
  if (series.other) add_attribute(attributes, names::kSeries.otlp, "other");
  if (series.runtime) add_attribute(attributes, names::kContainerRuntime.otlp, *series.runtime);
  // --config: the target's name and its labels, as the file names them.
  for (const auto& [key, value] : exported_labels(function.labels, kOwnAttributeNames)) {
    add_attribute(attributes, key, value);
  }
}

// Resource attributes in precedence order: detected values, then
// OTEL_RESOURCE_ATTRIBUTES, then the service name; a later key replaces an
// earlier one in place.
void fill_resource(opentelemetry::proto::resource::v1::Resource* resource,
                   const OtlpOptions& options, const ExportContext& context) {
  OtlpKeyValues strings;
  auto set = [&](const std::string& key, const std::string& value) {
    for (auto& [existing_key, existing_value] : strings) {
      if (existing_key == key) {
        existing_value = value;
        return;
      }
    }
    strings.emplace_back(key, value);
  };
  if (!context.host_name.empty()) set("host.name", context.host_name);
  if (!context.traced_executable.empty()) set("process.executable.path", context.traced_executable);
  for (const auto& [key, value] : options.resource_attributes) set(key, value);
  set("service.name", options.service_name);
  for (const auto& [key, value] : strings)
    add_attribute(resource->mutable_attributes(), key, value);
  if (context.traced_pid != 0) {
    add_attribute(resource->mutable_attributes(), "process.pid", int64_t{context.traced_pid});
  }
}

// A histogram built from a difference of totals has calls but no known
// minimum or maximum (LatencyHistogram::min); OTLP's min and max are
// optional, so such points go without.
template <typename Point>
void fill_min_max(Point* point, const LatencyHistogram& histogram, double ns_per_unit) {
  if (auto min = histogram.known_min_ns()) point->set_min(static_cast<double>(*min) / ns_per_unit);
  if (auto max = histogram.known_max_ns()) point->set_max(static_cast<double>(*max) / ns_per_unit);
}

template <typename Point>
void fill_summary(Point* point, const LatencyHistogram& histogram) {
  point->set_count(histogram.count());
  point->set_sum(static_cast<double>(histogram.sum_ns()) / kNsPerMs);
  fill_min_max(point, histogram, kNsPerMs);
}

std::string stacktrace_of(const std::vector<StackFrame>& stack) {
  std::string text;
  const size_t shown = std::min(stack.size(), kMaxExemplarFrames);
  for (size_t i = 0; i < shown; i++) {
    if (!text.empty()) text += '\n';
    text += frame_text(stack[i]);
  }
  if (stack.size() > shown) text += "\n... " + std::to_string(stack.size() - shown) + " more";
  return text;
}

// --slowest: each call as an exemplar of `point`, its value in the point's
// unit (`ns_per_unit` ns each). The point's attributes are not repeated: with
// --by pid the point already names the process.
template <typename Point>
void add_exemplars(Point* point, const std::vector<SlowCall>& calls, const FunctionReport& function,
                   double ns_per_unit) {
  for (const SlowCall& call : calls) {
    auto* exemplar = point->add_exemplars();
    exemplar->set_time_unix_nano(unix_nanos(call.time));
    exemplar->set_as_double(static_cast<double>(call.duration_ns) / ns_per_unit);
    auto* attributes = exemplar->mutable_filtered_attributes();
    if (!function.series.pid)
      add_attribute(attributes, names::kExemplarPid.otlp, int64_t{call.pid});
    add_attribute(attributes, names::kExemplarTid.otlp, int64_t{call.tid});
    if (!call.thread.empty()) add_attribute(attributes, "thread.name", call.thread);
    if (!call.stack.empty())
      add_attribute(attributes, names::kExemplarStack.otlp, stacktrace_of(call.stack));
  }
}

void fill_explicit_point(metrics_pb::HistogramDataPoint* point, const LatencyHistogram& histogram,
                         const std::vector<double>& bounds) {
  fill_summary(point, histogram);
  for (double bound : bounds) point->add_explicit_bounds(bound);
  for (uint64_t count : histogram.log2_counts()) point->add_bucket_counts(count);
}

// Scale 0 in the display unit; see the header for why this is the finest
// exact choice. Values are in the display unit, so sum/min/max are too.
void fill_exponential_point(metrics_pb::ExponentialHistogramDataPoint* point,
                            const LatencyHistogram& histogram) {
  double ns_per_unit = static_cast<double>(histogram.unit_ns());
  point->set_count(histogram.count());
  point->set_sum(static_cast<double>(histogram.sum_ns()) / ns_per_unit);
  fill_min_max(point, histogram, ns_per_unit);
  point->set_scale(0);
  point->set_zero_threshold(1.0);
  const LatencyHistogram::PowerOfTwoCounts counts = histogram.power_of_two_counts();
  const LatencyHistogram::RowCounts& by_index = counts.by_exponent;
  point->set_zero_count(counts.below_one);
  int first = -1, last = -1;
  for (int i = 0; i < static_cast<int>(by_index.size()); i++) {
    if (by_index[i] == 0) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return;
  auto* positive = point->mutable_positive();
  positive->set_offset(first);
  for (int i = first; i <= last; i++) positive->add_bucket_counts(by_index[i]);
}

metrics_pb::AggregationTemporality temporality_of(const OtlpOptions& options) {
  return options.temporality == OtlpTemporality::kDelta
             ? metrics_pb::AGGREGATION_TEMPORALITY_DELTA
             : metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE;
}

// A histogram metric with a point per function: explicit, named
// `explicit_name` (in ms), or exponential in the display unit, as the options
// say. `histogram_of` gives a function's histogram, or nullptr to leave the
// function out; `slowest_of` the calls to attach as exemplars, or nullptr.
template <typename HistogramOf, typename SlowestOf>
void add_latency_metric(metrics_pb::ScopeMetrics* scope, std::string_view explicit_name,
                        const char* description, const Report& report, const OtlpOptions& options,
                        uint64_t start_ns, uint64_t time_ns, const HistogramOf& histogram_of,
                        const SlowestOf& slowest_of) {
  auto* metric = scope->add_metrics();
  metric->set_description(description);
  uint64_t unit_ns = report.functions.empty() ? 1000 : report.functions.front().total.unit_ns();
  const bool explicit_kind = options.histogram == OtlpHistogramKind::kExplicit;
  // The unit of the points' values: ms, or the display unit (exponential).
  const double ns_per_unit = explicit_kind ? kNsPerMs : static_cast<double>(unit_ns);
  auto add_points = [&](auto* histogram, const auto& fill_point) {
    histogram->set_aggregation_temporality(temporality_of(options));
    for (const auto& function : report.functions) {
      const LatencyHistogram* values = histogram_of(function);
      if (!values) continue;
      auto* point = histogram->add_data_points();
      add_function_attributes(point->mutable_attributes(), function, options);
      point->set_start_time_unix_nano(start_ns);
      point->set_time_unix_nano(time_ns);
      fill_point(point, *values);
      if (const std::vector<SlowCall>* calls = slowest_of(function)) {
        add_exemplars(point, *calls, function, ns_per_unit);
      }
    }
  };
  if (explicit_kind) {
    metric->set_name(std::string(explicit_name));
    metric->set_unit("ms");
    auto bounds = explicit_bounds_ms(unit_ns);
    add_points(metric->mutable_histogram(),
               [&](metrics_pb::HistogramDataPoint* point, const LatencyHistogram& values) {
                 fill_explicit_point(point, values, bounds);
               });
  } else {
    metric->set_name(exponential_metric_name(unit_ns, explicit_name));
    metric->set_unit(unit_symbol(unit_ns));
    add_points(metric->mutable_exponential_histogram(), fill_exponential_point);
  }
}

metrics_pb::Sum* add_monotonic_sum(metrics_pb::ScopeMetrics* scope, std::string_view name,
                                   const char* description, const char* unit,
                                   const OtlpOptions& options) {
  auto* metric = scope->add_metrics();
  metric->set_name(std::string(name));
  metric->set_description(description);
  metric->set_unit(unit);
  auto* sum = metric->mutable_sum();
  sum->set_aggregation_temporality(temporality_of(options));
  sum->set_is_monotonic(true);
  return sum;
}

metrics_pb::NumberDataPoint* add_count_point(metrics_pb::Sum* sum, uint64_t start_ns,
                                             uint64_t time_ns, uint64_t value) {
  auto* point = sum->add_data_points();
  point->set_start_time_unix_nano(start_ns);
  point->set_time_unix_nano(time_ns);
  point->set_as_int(static_cast<int64_t>(value));
  return point;
}

// An optional part's histogram metric (--cpu-split's parts, --self), with no
// exemplars: `part_of` gives a function's part, or nullptr where the function
// has none. Nothing when no function has it.
template <typename PartOf>
void add_part_metric(metrics_pb::ScopeMetrics* scope, std::string_view name,
                     const char* description, const Report& report, const OtlpOptions& options,
                     uint64_t start_ns, uint64_t time_ns, const PartOf& part_of) {
  if (std::ranges::none_of(report.functions, part_of)) return;
  add_latency_metric(scope, name, description, report, options, start_ns, time_ns, part_of,
                     [](const FunctionReport&) -> const std::vector<SlowCall>* { return nullptr; });
}

// --cpu-split: where the latency went, one histogram per part.
void add_cpu_split_metrics(metrics_pb::ScopeMetrics* scope, const Report& report,
                           const OtlpOptions& options, bool delta, uint64_t start_ns,
                           uint64_t time_ns) {
  const std::tuple<std::string_view, const char*, LatencyHistogram CpuSplit::*> parts[] = {
      {kOncpuMetricName, "Time calls to a traced function spent running on a CPU",
       &CpuSplit::oncpu},
      {kRunnableMetricName,
       "Time calls to a traced function spent switched out while runnable: waiting for a CPU",
       &CpuSplit::runnable},
      {kBlockedMetricName,
       "Time calls to a traced function spent switched out while sleeping: a lock, I/O, a "
       "sleep",
       &CpuSplit::blocked},
  };
  for (const auto& [name, description, part] : parts) {
    add_part_metric(scope, name, description, report, options, start_ns, time_ns,
                    [&](const FunctionReport& function) -> const LatencyHistogram* {
                      const auto& split = delta ? function.interval_split : function.total_split;
                      return split ? &(*split.*part) : nullptr;
                    });
  }
}

// --self: each call's exclusive time.
void add_self_time_metric(metrics_pb::ScopeMetrics* scope, const Report& report,
                          const OtlpOptions& options, bool delta, uint64_t start_ns,
                          uint64_t time_ns) {
  add_part_metric(scope, kSelfTimeMetricName,
                  "Self (exclusive) time of calls to a traced function: each call's time less "
                  "that of the traced calls it made directly",
                  report, options, start_ns, time_ns,
                  [&](const FunctionReport& function) -> const LatencyHistogram* {
                    const auto& self = delta ? function.interval_self : function.total_self;
                    return self ? &*self : nullptr;
                  });
}

// Lost calls, a point per function and reason. Returns the calls the ring
// buffer dropped, summed over the functions.
uint64_t add_lost_calls_metric(metrics_pb::ScopeMetrics* scope, const Report& report,
                               const OtlpOptions& options, bool delta, uint64_t start_ns,
                               uint64_t time_ns) {
  auto* lost = add_monotonic_sum(scope, kFunctionLostCallsMetricName,
                                 "Calls that were not timed, by reason: unreturned (exception, "
                                 "longjmp, return probe limit), depth (nested too deep), ringbuf "
                                 "(ring buffer full)",
                                 "{call}", options);
  uint64_t ringbuf_dropped = 0;
  for (const auto& function : report.functions) {
    const LostCounts& counts = delta ? function.interval_lost : function.total_lost;
    ringbuf_dropped += counts.ringbuf;
    const std::pair<std::string_view, uint64_t> call_reasons[] = {
        {"unreturned", counts.unreturned}, {"depth", counts.depth}, {"ringbuf", counts.ringbuf}};
    // A span's: started again before its end, no room, open at the end.
    const std::pair<std::string_view, uint64_t> span_reasons[] = {{"reused", counts.span_reused},
                                                                  {"full", counts.span_full},
                                                                  {"open", counts.span_open},
                                                                  {"ringbuf", counts.ringbuf}};
    for (auto [reason, value] :
         function.span ? std::span<const std::pair<std::string_view, uint64_t>>(span_reasons)
                       : std::span<const std::pair<std::string_view, uint64_t>>(call_reasons)) {
      auto* point = add_count_point(lost, start_ns, time_ns, value);
      add_function_attributes(point->mutable_attributes(), function, options);
      add_attribute(point->mutable_attributes(), names::kReason.otlp, std::string(reason));
    }
  }
  return ringbuf_dropped;
}

// The tool's health: lost calls, ring buffer drops and export failures.
void add_health_metrics(metrics_pb::ScopeMetrics* scope, const Report& report,
                        const OtlpOptions& options, const ExporterHealth& health, bool delta,
                        uint64_t start_ns, uint64_t time_ns) {
  uint64_t ringbuf_dropped =
      add_lost_calls_metric(scope, report, options, delta, start_ns, time_ns);
  // Cumulative: the report's total also counts functions it does not list.
  if (!delta) ringbuf_dropped = std::max(ringbuf_dropped, report.ringbuf_dropped_total);
  add_count_point(add_monotonic_sum(scope, kRingbufDroppedMetricName,
                                    "Completed calls whose event found the ring buffer full",
                                    "{call}", options),
                  start_ns, time_ns, ringbuf_dropped);
  add_count_point(
      add_monotonic_sum(scope, kFailedExportsMetricName,
                        "OTLP export attempts that did not succeed", "{request}", options),
      start_ns, time_ns, health.failed_exports);
  add_count_point(add_monotonic_sum(scope, kDroppedRequestsMetricName,
                                    "OTLP export requests given up: queue full, rejected, or out "
                                    "of retries",
                                    "{request}", options),
                  start_ns, time_ns, health.dropped_requests);
}

// --follow/--config: the agent's own metrics (self_metrics.h), cumulative
// whatever the temporality (they are the agent's state since it started),
// gauges where Prometheus has gauges: the same list as Prometheus', lost
// calls of all functions (funclatency_lost_calls) included.
void add_self_metrics(metrics_pb::ScopeMetrics* scope, const Report& report, uint64_t start_ns,
                      uint64_t time_ns) {
  for (const SelfMetric& self : self_metrics(report)) {
    auto* metric = scope->add_metrics();
    metric->set_name(std::string(self.name));
    metric->set_description(std::string(self.help));
    metric->set_unit(std::string(self.otlp_unit));
    google::protobuf::RepeatedPtrField<metrics_pb::NumberDataPoint>* points;
    if (self.kind == SelfMetricKind::kCounter) {
      auto* sum = metric->mutable_sum();
      sum->set_aggregation_temporality(metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
      sum->set_is_monotonic(true);
      points = sum->mutable_data_points();
    } else {
      points = metric->mutable_gauge()->mutable_data_points();
    }
    for (const SelfMetricSample& sample : self.samples) {
      auto* point = points->Add();
      if (self.kind == SelfMetricKind::kCounter) point->set_start_time_unix_nano(start_ns);
      point->set_time_unix_nano(time_ns);
      if (self.integral) {
        point->set_as_int(static_cast<int64_t>(sample.value));
      } else {
        point->set_as_double(sample.value);
      }
      if (!self.label.otlp.empty()) {
        add_attribute(point->mutable_attributes(), self.label.otlp, sample.label_value);
      }
    }
  }
}

}  // namespace

std::string unit_symbol(uint64_t unit_ns) {
  constexpr NamedValue<uint64_t> kSymbols[] = {
      {1, "ns"}, {1000, "us"}, {1000000, "ms"}, {1000000000, "s"}};
  const std::string_view symbol = name_in(kSymbols, unit_ns);
  return symbol.empty() ? std::to_string(unit_ns) + "ns" : std::string(symbol);
}

std::string exponential_metric_name(uint64_t unit_ns, std::string_view explicit_name) {
  if (explicit_name.ends_with("_ms")) explicit_name.remove_suffix(3);
  return std::string(explicit_name) + "_" + unit_symbol(unit_ns);
}

std::vector<double> explicit_bounds_ms(uint64_t unit_ns) {
  std::vector<double> bounds;
  for (uint32_t row = 1; row < LatencyHistogram::kLog2Rows; row++) {
    // The row's first value in ns is 2^row * unit_ns, exact as a double (a
    // power of two times an integer below 2^53); one rounding to ms.
    const double low_units = static_cast<double>(LatencyHistogram::row_low(row));
    bounds.push_back(low_units * static_cast<double>(unit_ns) / kNsPerMs);
  }
  return bounds;
}

otlp_pb::ExportMetricsServiceRequest build_export_request(const Report& report,
                                                          const OtlpOptions& options,
                                                          const ExportContext& context,
                                                          const ExporterHealth& health) {
  bool delta = options.temporality == OtlpTemporality::kDelta;
  uint64_t start_ns = unix_nanos(delta ? report.interval_start : report.run_start);
  uint64_t time_ns = unix_nanos(report.time);

  otlp_pb::ExportMetricsServiceRequest request;
  auto* resource_metrics = request.add_resource_metrics();
  fill_resource(resource_metrics->mutable_resource(), options, context);
  auto* scope = resource_metrics->add_scope_metrics();
  scope->mutable_scope()->set_name("funclatency");
  scope->mutable_scope()->set_version(context.tool_version);

  // The latency histogram, one point per function (not there when only
  // spans are traced).
  if (!std::ranges::all_of(report.functions, &FunctionReport::span) || report.functions.empty())
    add_latency_metric(
        scope, kLatencyMetricName, "Duration of calls to a traced function, from entry to return",
        report, options, start_ns, time_ns,
        [&](const FunctionReport& function) -> const LatencyHistogram* {
          if (function.span) return nullptr;
          return &(delta ? function.interval : function.total);
        },
        [&](const FunctionReport& function) {
          return &(delta ? function.interval_slowest : function.total_slowest);
        });
  // --span: the spans' histogram, a metric of its own.
  if (std::ranges::any_of(report.functions, &FunctionReport::span)) {
    add_latency_metric(
        scope, metric_names::kSpanLatency,
        "Duration of spans, from a start point to the end point its thread or value matches",
        report, options, start_ns, time_ns,
        [&](const FunctionReport& function) -> const LatencyHistogram* {
          if (!function.span) return nullptr;
          return &(delta ? function.interval : function.total);
        },
        [&](const FunctionReport& function) {
          return &(delta ? function.interval_slowest : function.total_slowest);
        });
  }
  add_cpu_split_metrics(scope, report, options, delta, start_ns, time_ns);
  add_self_time_metric(scope, report, options, delta, start_ns, time_ns);
  add_health_metrics(scope, report, options, health, delta, start_ns, time_ns);
  add_self_metrics(scope, report, unix_nanos(report.run_start), time_ns);
  return request;
}

}  // namespace funclatency
