// The agent (--follow/--config) over OTLP: the self-metrics under the names
// Prometheus has (less _total), counters cumulative, gauges as gauges, and
// the target's labels and container runtime as point attributes.
#include <gtest/gtest.h>

#include <map>

#include "../agent_test_report.h"
#include "otlp_test_reports.h"
#include "output/otlp/otlp_convert.h"

namespace funclatency {
namespace {

namespace metrics_pb = opentelemetry::proto::metrics::v1;
using testing::agent_report;
using testing::attributes_of;

std::map<std::string, const metrics_pb::Metric*> metrics_of(
    const otlp_pb::ExportMetricsServiceRequest& request) {
  std::map<std::string, const metrics_pb::Metric*> metrics;
  for (const auto& metric : request.resource_metrics(0).scope_metrics(0).metrics()) {
    EXPECT_TRUE(metrics.emplace(metric.name(), &metric).second) << "twice: " << metric.name();
  }
  return metrics;
}

ExportContext context() {
  return {.host_name = "box1", .tool_version = "9.8.7"};
}

using testing::nanos;

TEST(OtlpConvertAgent, SelfMetricsAreSumsAndGauges) {
  const Report report = agent_report();
  // Cumulative even when the rest is delta: they are the agent's state.
  for (auto temporality : {OtlpTemporality::kCumulative, OtlpTemporality::kDelta}) {
    auto request =
        build_export_request(report, OtlpOptions{.temporality = temporality}, context(), {});
    auto metrics = metrics_of(request);
    const std::pair<const char*, int64_t> gauges[] = {
        {"funclatency_config_last_reload_successful", 0},
        {"funclatency_attached_functions", 2},
        {"funclatency_attached_files", 3},
        {"funclatency_kernel_memory_bytes", 4096}};
    for (const auto& [name, value] : gauges) {
      ASSERT_TRUE(metrics.contains(name)) << name;
      const auto& gauge = metrics[name]->gauge();
      ASSERT_EQ(gauge.data_points_size(), 1) << name;
      EXPECT_EQ(gauge.data_points(0).as_int(), value) << name;
      EXPECT_EQ(gauge.data_points(0).time_unix_nano(), nanos(report.time));
    }
    const std::pair<const char*, int64_t> counters[] = {
        {"funclatency_config_reload_failures", 4}, {"funclatency_exec_events", 1234},
        {"funclatency_exec_dropped", 6},           {"funclatency_ringbuf_dropped", 2},
        {"funclatency_series_folded", 5},          {"funclatency_series_expired", 8}};
    for (const auto& [name, value] : counters) {
      ASSERT_TRUE(metrics.contains(name)) << name;
      const auto& sum = metrics[name]->sum();
      EXPECT_TRUE(sum.is_monotonic()) << name;
      EXPECT_EQ(sum.aggregation_temporality(), metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
      ASSERT_EQ(sum.data_points_size(), 1) << name;
      EXPECT_EQ(sum.data_points(0).as_int(), value) << name;
      EXPECT_EQ(sum.data_points(0).start_time_unix_nano(), nanos(report.run_start)) << name;
      EXPECT_FALSE(metrics[name]->description().empty()) << name;
    }
    const auto& cpu = metrics["funclatency_probe_cpu_seconds"];
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->unit(), "s");
    EXPECT_TRUE(cpu->sum().is_monotonic());
    EXPECT_DOUBLE_EQ(cpu->sum().data_points(0).as_double(), 0.125);

    const auto* failures = metrics["funclatency_attach_failures"];
    ASSERT_NE(failures, nullptr);
    std::map<std::string, int64_t> by_reason;
    for (const auto& point : failures->sum().data_points()) {
      by_reason[attributes_of(point.attributes()).at("reason")] = point.as_int();
    }
    EXPECT_EQ(by_reason, (std::map<std::string, int64_t>{
                             {"no_function", 7}, {"no_room", 0}, {"kernel_refused", 1}}));

    // All functions' lost calls, by reason, as Prometheus'
    // funclatency_lost_calls_total; function_lost_calls has them per function.
    const auto* lost = metrics["funclatency_lost_calls"];
    ASSERT_NE(lost, nullptr);
    std::map<std::string, int64_t> lost_by_reason;
    for (const auto& point : lost->sum().data_points()) {
      lost_by_reason[attributes_of(point.attributes()).at("reason")] = point.as_int();
    }
    EXPECT_EQ(lost_by_reason,
              (std::map<std::string, int64_t>{{"unreturned", 4}, {"depth", 1}, {"ringbuf", 2}}));
  }
}

TEST(OtlpConvertAgent, NoSelfMetricsWithoutTheAgent) {
  Report report = agent_report();
  report.agent.reset();
  auto metrics = metrics_of(build_export_request(report, OtlpOptions{}, context(), {}));
  EXPECT_FALSE(metrics.contains("funclatency_exec_events"));
  EXPECT_FALSE(metrics.contains("funclatency_attached_functions"));
}

TEST(OtlpConvertAgent, TargetLabelsAndRuntimeAreAttributes) {
  Report report = agent_report();
  report.functions[1].labels.emplace_back("symbol", "clash");
  auto request = build_export_request(report, OtlpOptions{}, context(), {});
  auto metrics = metrics_of(request);
  using Attributes = std::map<std::string, std::string>;
  const Attributes slow = {{"symbol", "slow_op"},
                           {"binary", "/app/prog"},
                           {"cgroup", *report.functions[0].series.cgroup},
                           {"container.id", *report.functions[0].series.container_id},
                           {"container.runtime", "podman"},
                           {"target", "checkout"},
                           {"service", "cart"},
                           {"team", "pay\"ments"}};
  const Attributes fast = {{"symbol", "fast_op"},     {"binary", "/app/prog"},
                           {"cgroup", "/user.slice"}, {"target", "search"},
                           {"service", "find"},       {"exported_symbol", "clash"}};
  const auto& points = metrics.at(std::string(kLatencyMetricName))->histogram().data_points();
  ASSERT_EQ(points.size(), 2);
  EXPECT_EQ(attributes_of(points[0].attributes()), slow);
  EXPECT_EQ(attributes_of(points[1].attributes()), fast);
  EXPECT_EQ(points[1].attributes().size(), fast.size()) << "a key twice";
  // The per-function lost calls carry them too.
  for (const auto& point :
       metrics.at(std::string(kFunctionLostCallsMetricName))->sum().data_points()) {
    auto attributes = attributes_of(point.attributes());
    attributes.erase("reason");
    EXPECT_TRUE(attributes == slow || attributes == fast);
  }
}

}  // namespace
}  // namespace funclatency
