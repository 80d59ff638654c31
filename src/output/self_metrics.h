// The agent's own metrics (--follow/--config), as both exporters carry them:
// one list of names, kinds, units and help texts, so the Prometheus endpoint
// and OTLP cannot drift apart. A pure function of the Report.
//
// Names (metric_names.h, which has the rule) start with `funclatency_`,
// never with --prometheus-prefix: they are the tool's, as prometheus_* are
// Prometheus' own. `name` is the family: the Prometheus sample name of a
// counter adds `_total`, the OTLP metric is `name` itself.
//
// Also here: --config labels as exporter labels (exported_labels).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/report.h"
#include "output/metric_names.h"

namespace funclatency {

enum class SelfMetricKind { kGauge, kCounter };

enum class SelfMetricId {
  kConfigLastReloadSuccessful,
  kConfigReloadFailures,
  kAttachedFunctions,
  kAttachedFiles,
  kAttachFailures,
  kExecEvents,
  kExecDropped,
  kAllLostCalls,  // summed over every function; metric_names::kFunctionLostCalls is per function
  kRingbufDropped,
  kSeriesFolded,
  kSeriesExpired,
  kProbeCpuSeconds,
  kKernelMemory,
};

struct SelfMetricSample {
  std::string label_value;  // the value of SelfMetric::label; empty without one
  double value = 0;
};

struct SelfMetric {
  SelfMetricId id;
  std::string_view name;  // the family: funclatency_..., without _total
  SelfMetricKind kind;
  std::string_view help;
  std::string_view openmetrics_unit;  // OpenMetrics' UNIT ("seconds"), or empty
  std::string_view otlp_unit;         // UCUM, as OTLP wants it ("s", "{call}")
  bool integral = true;               // counts: OTLP as_int; else as_double
  metric_names::AttributeName label;  // kReason, or empty for one unlabelled sample
  std::vector<SelfMetricSample> samples;
};

// The self-metrics of `report`, in a fixed order; empty unless report.agent is
// set. Lost calls are summed over the report's functions, by reason.
std::vector<SelfMetric> self_metrics(const Report& report);

// --config labels (FunctionReport::labels) as an exporter's labels. A name
// the exporter already gives a label of its own (`own`: symbol, pid, le...)
// is renamed exported_<name>, as Prometheus renames a scraped label that
// clashes with one it sets, again until it clashes with nothing, so no
// series ever carries a label name twice. Order and values are kept.
using LabelList = std::vector<std::pair<std::string, std::string>>;
LabelList exported_labels(const LabelList& labels, std::span<const std::string_view> own);

}  // namespace funclatency
