// The agent (--follow/--config) on /metrics: its self-metrics under their
// documented names whatever the prefix, in both formats, and the target's
// labels and container runtime on every series of the function.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "../agent_test_report.h"
#include "openmetrics_check.h"
#include "output/prometheus/exposition.h"

namespace funclatency {
namespace {

using testing::agent_report;
using testing::check_openmetrics;

using testing::lines_of;

bool has_line(const std::string& text, const std::string& line) {
  return std::ranges::count(lines_of(text), line) == 1;
}

// The self-metrics' sample lines of agent_report(), the same in both formats.
const char* const kSelfSamples[] = {
    "funclatency_config_last_reload_successful 0",
    "funclatency_config_reload_failures_total 4",
    "funclatency_attached_functions 2",
    "funclatency_attached_files 3",
    R"(funclatency_attach_failures_total{reason="no_function"} 7)",
    R"(funclatency_attach_failures_total{reason="no_room"} 0)",
    R"(funclatency_attach_failures_total{reason="kernel_refused"} 1)",
    "funclatency_exec_events_total 1234",
    "funclatency_exec_dropped_total 6",
    R"(funclatency_lost_calls_total{reason="unreturned"} 4)",
    R"(funclatency_lost_calls_total{reason="depth"} 1)",
    R"(funclatency_lost_calls_total{reason="ringbuf"} 2)",
    "funclatency_ringbuf_dropped_total 2",
    "funclatency_series_folded_total 5",
    "funclatency_series_expired_total 8",
    "funclatency_probe_cpu_seconds_total 0.125",
    "funclatency_kernel_memory_bytes 4096",
};

TEST(ExpositionAgent, SelfMetricsUnprefixedInBothFormats) {
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    for (const char* prefix : {"ebpf", "", "funclatency"}) {
      std::string text = render_exposition(agent_report(), format, prefix);
      for (const char* sample : kSelfSamples) {
        EXPECT_TRUE(has_line(text, sample)) << sample << "\n" << text;
      }
    }
  }
}

TEST(ExpositionAgent, MetadataNamesTheSampleInTextAndTheFamilyInOpenMetrics) {
  std::string text = render_exposition(agent_report(), ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_TRUE(has_line(text, "# TYPE funclatency_exec_events_total counter"));
  EXPECT_TRUE(has_line(text, "# TYPE funclatency_attached_files gauge"));
  EXPECT_TRUE(has_line(text, "# TYPE funclatency_probe_cpu_seconds_total counter"));
  EXPECT_NE(text.find("# HELP funclatency_config_last_reload_successful 1 if"), std::string::npos);
  std::string open = render_exposition(agent_report(), ExpositionFormat::kOpenMetrics, "ebpf");
  EXPECT_TRUE(has_line(open, "# TYPE funclatency_exec_events counter"));
  EXPECT_TRUE(has_line(open, "# TYPE funclatency_attached_files gauge"));
  EXPECT_TRUE(has_line(open, "# UNIT funclatency_probe_cpu_seconds seconds"));
  EXPECT_EQ(lines_of(open).back(), "# EOF");
  // Every family has its HELP and TYPE, once.
  for (const std::string& body : {text, open}) {
    size_t helps = 0, types = 0;
    for (const auto& line : lines_of(body)) {
      helps += line.starts_with("# HELP funclatency_");
      types += line.starts_with("# TYPE funclatency_");
    }
    EXPECT_EQ(helps, 13u);
    EXPECT_EQ(types, 13u);
  }
}

TEST(ExpositionAgent, OpenMetricsCheckerAcceptsIt) {
  for (const char* prefix : {"ebpf", ""}) {
    std::string text = render_exposition(agent_report(), ExpositionFormat::kOpenMetrics, prefix);
    std::string problems;
    for (const auto& problem : check_openmetrics(text)) problems += problem + "\n";
    EXPECT_EQ(problems, "") << text;
  }
}

TEST(ExpositionAgent, NoSelfMetricsWithoutTheAgent) {
  Report report = agent_report();
  report.agent.reset();
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    std::string text = render_exposition(report, format, "ebpf");
    EXPECT_EQ(text.find("funclatency_"), std::string::npos) << text;
  }
}

TEST(ExpositionAgent, TargetLabelsAndRuntimeOnEveryFamilyOfTheFunction) {
  std::string text = render_exposition(agent_report(), ExpositionFormat::kPrometheusText, "ebpf");
  const std::string cgroup =
      "/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef."
      "scope";
  const std::string id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  const std::string slow = R"({symbol="slow_op",binary="/app/prog",cgroup=")" + cgroup +
                           R"(",container_id=")" + id +
                           R"(",container_runtime="podman",target="checkout",service="cart",)"
                           R"(team="pay\"ments")";
  // fast_op has no runtime and no team: empty, so every series has the same names.
  const std::string fast =
      R"({symbol="fast_op",binary="/app/prog",cgroup="/user.slice",container_id="",)"
      R"(container_runtime="",target="search",service="find",team="")";
  EXPECT_TRUE(has_line(text, "ebpf_function_latency_ms_count" + slow + "} 2")) << text;
  EXPECT_TRUE(has_line(text, "ebpf_function_latency_ms_bucket" + slow + R"(,le="+Inf"} 2)"));
  EXPECT_TRUE(has_line(text, "ebpf_function_latency_ms_count" + fast + "} 1")) << text;
  EXPECT_TRUE(
      has_line(text, "ebpf_function_lost_calls_total" + slow + R"(,reason="unreturned"} 3)"));
  EXPECT_TRUE(
      has_line(text, "ebpf_function_lost_calls_total" + fast + R"(,reason="unreturned"} 1)"));
}

TEST(ExpositionAgent, LabelsThatClashAreRenamedAndTellSeriesApart) {
  Report report = agent_report();
  report.agent.reset();
  report.functions[1] = report.functions[0];
  report.functions[0].labels = {{"target", "a"}, {"le", "x"}, {"pid", "7"}};
  report.functions[1].labels = {{"target", "b"}};
  auto snapshot = snapshot_of(report);
  ASSERT_EQ(snapshot.functions.size(), 2u) << "series of two targets merged";
  std::string text = render_exposition(snapshot, ExpositionFormat::kOpenMetrics, "ebpf");
  EXPECT_NE(text.find(R"(target="a",exported_le="x",exported_pid="7",le="0.002"})"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(target="b",exported_le="",exported_pid="",le="0.002"})"),
            std::string::npos)
      << text;
  std::string problems;
  for (const auto& problem : check_openmetrics(text)) problems += problem + "\n";
  EXPECT_EQ(problems, "");
}

}  // namespace
}  // namespace funclatency
