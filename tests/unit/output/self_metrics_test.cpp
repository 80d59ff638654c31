// The agent's self-metrics as both exporters take them (self_metrics.h): one
// per AgentStatus field the operator needs, only with --follow/--config, and
// --config labels renamed where they clash with an exporter's own.
#include "output/self_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "agent_test_report.h"

namespace funclatency {
namespace {

using testing::agent_report;

const SelfMetric& metric_named(const std::vector<SelfMetric>& metrics, std::string_view name) {
  auto found = std::ranges::find(metrics, name, &SelfMetric::name);
  if (found == metrics.end()) throw std::runtime_error("no self-metric " + std::string(name));
  return *found;
}

std::map<std::string, double> by_label(const SelfMetric& metric) {
  std::map<std::string, double> values;
  for (const auto& sample : metric.samples) values[sample.label_value] = sample.value;
  return values;
}

TEST(SelfMetrics, OnlyForTheAgent) {
  Report report = agent_report();
  report.agent.reset();
  EXPECT_TRUE(self_metrics(report).empty());
}

TEST(SelfMetrics, EveryFieldUnderItsDocumentedName) {
  const auto metrics = self_metrics(agent_report());
  using enum SelfMetricKind;
  const std::tuple<std::string_view, SelfMetricKind, double> unlabelled[] = {
      {"funclatency_config_last_reload_successful", kGauge, 0},
      {"funclatency_config_reload_failures", kCounter, 4},
      {"funclatency_attached_functions", kGauge, 2},
      {"funclatency_attached_files", kGauge, 3},
      {"funclatency_exec_events", kCounter, 1234},
      {"funclatency_exec_dropped", kCounter, 6},
      {"funclatency_ringbuf_dropped", kCounter, 2},
      {"funclatency_series_folded", kCounter, 5},
      {"funclatency_series_expired", kCounter, 8},
      {"funclatency_probe_cpu_seconds", kCounter, 0.125},
      {"funclatency_kernel_memory_bytes", kGauge, 4096},
  };
  for (const auto& [name, kind, value] : unlabelled) {
    const SelfMetric& metric = metric_named(metrics, name);
    EXPECT_EQ(metric.kind, kind) << name;
    EXPECT_TRUE(metric.label.prometheus.empty() && metric.label.otlp.empty()) << name;
    ASSERT_EQ(metric.samples.size(), 1u) << name;
    EXPECT_EQ(metric.samples[0].value, value) << name;
    EXPECT_FALSE(metric.help.empty()) << name;
  }
  const SelfMetric& failures = metric_named(metrics, "funclatency_attach_failures");
  EXPECT_EQ(failures.kind, kCounter);
  EXPECT_EQ(failures.label.prometheus, "reason");
  EXPECT_EQ(failures.label.otlp, "reason");
  EXPECT_EQ(by_label(failures), (std::map<std::string, double>{
                                    {"no_function", 7}, {"no_room", 0}, {"kernel_refused", 1}}));
  // Lost calls summed over the functions.
  const SelfMetric& lost = metric_named(metrics, "funclatency_lost_calls");
  EXPECT_EQ(lost.label.prometheus, "reason");
  EXPECT_EQ(by_label(lost),
            (std::map<std::string, double>{{"unreturned", 4}, {"depth", 1}, {"ringbuf", 2}}));
  EXPECT_EQ(metrics.size(), std::size(unlabelled) + 2);
  for (const SelfMetric& metric : metrics) {
    EXPECT_TRUE(metric.name.starts_with("funclatency_")) << metric.name;
    EXPECT_FALSE(metric.name.ends_with("_total")) << "a family name: " << metric.name;
  }
  EXPECT_EQ(metric_named(metrics, "funclatency_probe_cpu_seconds").openmetrics_unit, "seconds");
  EXPECT_FALSE(metric_named(metrics, "funclatency_probe_cpu_seconds").integral);
}

TEST(SelfMetrics, ReloadSuccessIsOne) {
  Report report = agent_report();
  report.agent->config_last_reload_successful = true;
  EXPECT_EQ(metric_named(self_metrics(report), "funclatency_config_last_reload_successful")
                .samples[0]
                .value,
            1);
}

TEST(ExportedLabels, KeepsFreeNamesAndRenamesClashes) {
  constexpr std::string_view own[] = {"pid", "le", "reason"};
  const LabelList labels = {
      {"target", "t"}, {"pid", "1"}, {"le", "x"}, {"exported_le", "y"}, {"team", "z"}};
  EXPECT_EQ(exported_labels(labels, own), (LabelList{{"target", "t"},
                                                     {"exported_pid", "1"},
                                                     {"exported_exported_le", "x"},
                                                     {"exported_le", "y"},
                                                     {"team", "z"}}));
  EXPECT_TRUE(exported_labels({}, own).empty());
}

}  // namespace
}  // namespace funclatency
