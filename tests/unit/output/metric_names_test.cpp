// The naming rule across both exporters (metric_names.h): one report,
// exported by Prometheus (prefix ebpf) and OTLP, has the same metrics under
// the names the rule gives (OTLP's name = Prometheus' family less the prefix,
// less _total), of matching kinds, with the labels/attributes paired by
// metric_names::kAttributes. An exporter that spells a metric its own way
// (say OTLP's lost calls as funclatency_lost_calls) fails here.
#include "output/metric_names.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "agent_test_report.h"
#include "output/otlp/otlp_convert.h"
#include "output/prometheus/exposition.h"

namespace funclatency {
namespace {

namespace names = metric_names;

// Every metric of a report: the agent's, --cpu-split, and --by series with
// each label the tool sets.
Report full_report() {
  Report report = testing::agent_report();
  CpuSplit split{LatencyHistogram(1000), LatencyHistogram(1000), LatencyHistogram(1000)};
  split.oncpu.record(1000);
  report.functions[0].total_split = split;
  report.functions[0].total_slowest = {};
  SeriesLabels& series = report.functions[1].series;
  series.pid = 42;
  series.comm = "worker";
  series.pod_uid = "0a1b2c3d-0000-4000-8000-000000000001";
  series.other = true;
  return report;
}

struct Family {
  std::string kind;              // counter, gauge, histogram
  std::set<std::string> labels;  // as the exporter names them
};

// family name (counters without _total) -> kind and label names, from text
// format 0.0.4 (whose TYPE lines name a counter with its _total).
std::map<std::string, Family> prometheus_families(const std::string& text) {
  std::map<std::string, Family> families;
  std::map<std::string, std::string> family_of_sample;
  std::istringstream lines(text);
  std::string line;
  // An empty value is no label (Prometheus' reading).
  const std::regex label(R"([{,]([a-zA-Z_][a-zA-Z0-9_]*)="(?!"))");
  while (std::getline(lines, line)) {
    if (line.starts_with("# TYPE ")) {
      std::istringstream words(line.substr(7));
      std::string name, kind;
      words >> name >> kind;
      std::string family = name;
      if (kind == "counter") {
        EXPECT_TRUE(family.ends_with(names::kCounterSuffix)) << line;
        family.resize(family.size() - names::kCounterSuffix.size());
      }
      families[family].kind = kind;
      for (std::string suffix : {"", "_bucket", "_sum", "_count"}) {
        family_of_sample[name + suffix] = family;
      }
      continue;
    }
    if (line.empty() || line.starts_with("#")) continue;
    std::string sample = line.substr(0, line.find_first_of("{ "));
    auto found = family_of_sample.find(sample);
    EXPECT_NE(found, family_of_sample.end()) << "no TYPE for " << line;
    if (found == family_of_sample.end()) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), label), end; it != end; ++it) {
      if ((*it)[1] != "le") families[found->second].labels.insert((*it)[1]);
    }
  }
  return families;
}

TEST(MetricNames, BothExportersNameEveryMetricByTheRule) {
  const Report report = full_report();
  const auto prometheus =
      prometheus_families(render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf"));
  const auto request = build_export_request(report, OtlpOptions{}, ExportContext{}, {});

  // Prometheus label -> OTLP attribute (pid: --by pid's; -p's pid is an
  // OTLP attribute only with --otlp-pid-attribute).
  std::map<std::string, std::string> attribute_of;
  for (const names::AttributeName& pair : names::kAttributes) {
    if (&pair != &names::kAttributes[2]) attribute_of.emplace(pair.prometheus, pair.otlp);
  }
  static_assert(names::kAttributes[2].otlp == names::kPid.otlp);

  std::set<std::string> from_otlp;
  for (const auto& metric : request.resource_metrics(0).scope_metrics(0).metrics()) {
    const std::string& name = metric.name();
    if (name == names::kOtlpFailedExports || name == names::kOtlpDroppedRequests) continue;
    const std::string family = names::prometheus_family(name, "ebpf");
    from_otlp.insert(family);
    auto found = prometheus.find(family);
    if (found == prometheus.end()) {
      ADD_FAILURE() << "OTLP's " << name << " is not Prometheus' " << family;
      continue;
    }
    std::string kind = metric.has_histogram() ? "histogram"
                       : metric.has_sum()     ? "counter"
                       : metric.has_gauge()   ? "gauge"
                                              : "?";
    EXPECT_EQ(kind, found->second.kind) << name;
    if (metric.has_sum()) EXPECT_TRUE(metric.sum().is_monotonic()) << name;

    std::set<std::string> attributes;
    auto add = [&](const auto& points) {
      for (const auto& point : points) {
        for (const auto& attribute : point.attributes()) attributes.insert(attribute.key());
      }
    };
    if (metric.has_histogram()) add(metric.histogram().data_points());
    if (metric.has_sum()) add(metric.sum().data_points());
    if (metric.has_gauge()) add(metric.gauge().data_points());
    std::set<std::string> expected;
    for (const std::string& label : found->second.labels) {
      auto paired = attribute_of.find(label);
      expected.insert(paired == attribute_of.end() ? label : paired->second);  // --config's
    }
    EXPECT_EQ(attributes, expected) << name;
  }
  for (const auto& [family, _] : prometheus) {
    EXPECT_TRUE(from_otlp.contains(family)) << "Prometheus' " << family << " has no OTLP metric";
  }
  // Every kind of metric was there to compare.
  for (std::string_view name : {names::kLatency, names::kOncpu, names::kRunnable, names::kBlocked,
                                names::kFunctionLostCalls, names::kRingbufDroppedCalls,
                                names::kAgentLostCalls, names::kProbeCpuSeconds}) {
    EXPECT_TRUE(prometheus.contains(names::prometheus_family(name, "ebpf"))) << name;
  }
}

TEST(MetricNames, PrefixOnlyOnWhatTheFunctionsDid) {
  EXPECT_EQ(names::prometheus_family(names::kLatency, "ebpf"), "ebpf_function_latency_ms");
  EXPECT_EQ(names::prometheus_family(names::kFunctionLostCalls, "ebpf"),
            "ebpf_function_lost_calls");
  EXPECT_EQ(names::prometheus_family(names::kAgentLostCalls, "ebpf"), "funclatency_lost_calls");
  EXPECT_EQ(names::prometheus_family(names::kLatency, ""), "function_latency_ms");
}

}  // namespace
}  // namespace funclatency
