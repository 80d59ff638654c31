// Report -> OTLP request: buckets, units, temporality, attributes and
// exemplars, checked on the generated messages (and, for exemplars, after a
// round trip through the wire format).
#include "output/otlp/otlp_convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "otlp_test_reports.h"

namespace funclatency {
namespace {

namespace metrics_pb = opentelemetry::proto::metrics::v1;
namespace common_pb = opentelemetry::proto::common::v1;

using testing::attributes_of;
using testing::kRows;
using testing::sample_report;

const metrics_pb::Metric* find_metric(const otlp_pb::ExportMetricsServiceRequest& request,
                                      std::string_view name) {
  for (const auto& metric : request.resource_metrics(0).scope_metrics(0).metrics()) {
    if (metric.name() == name) return &metric;
  }
  return nullptr;
}

ExportContext test_context() {
  return {.traced_pid = 4242,
          .traced_executable = "/usr/bin/target-app",
          .host_name = "box1",
          .tool_version = "9.8.7"};
}

using testing::nanos;

TEST(OtlpConvert, ExplicitHistogramBucketsAreTheConsoleRows) {
  auto report = sample_report();
  auto request = build_export_request(report, OtlpOptions{}, test_context(), {});
  const auto* metric = find_metric(request, "function_latency_ms");
  ASSERT_NE(metric, nullptr);
  EXPECT_EQ(metric->unit(), "ms");
  ASSERT_TRUE(metric->has_histogram());
  EXPECT_EQ(metric->histogram().aggregation_temporality(),
            metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  ASSERT_EQ(metric->histogram().data_points_size(), 2);
  for (int i = 0; i < 2; i++) {
    const auto& point = metric->histogram().data_points(i);
    const auto& function = report.functions[i];
    auto rows = function.total.log2_counts();
    ASSERT_EQ(point.bucket_counts_size(), kRows);
    ASSERT_EQ(point.explicit_bounds_size(), kRows - 1);
    for (int r = 0; r < kRows; r++) EXPECT_EQ(point.bucket_counts(r), rows[r]) << "row " << r;
    EXPECT_EQ(point.count(), function.total.count());
    EXPECT_DOUBLE_EQ(point.sum(), function.total.sum_ns() / 1e6);
    EXPECT_DOUBLE_EQ(point.min(), function.total.min_ns() / 1e6);
    EXPECT_DOUBLE_EQ(point.max(), function.total.max_ns() / 1e6);
    EXPECT_EQ(point.start_time_unix_nano(), nanos(report.run_start));
    EXPECT_EQ(point.time_unix_nano(), nanos(report.time));
    auto attributes = attributes_of(point.attributes());
    EXPECT_EQ(attributes, (std::map<std::string, std::string>{{"symbol", function.symbol},
                                                              {"binary", function.binary}}));
  }
  // The sample spreads over rows 0 (0, 999, 1999 ns), 1 (2 us, 3 us x2),
  // 9 (1 ms), 10 (1.5 ms) and 15 (40 ms): check the literal values once.
  const auto& slow = metric->histogram().data_points(0);
  EXPECT_EQ(slow.bucket_counts(0), 3u);
  EXPECT_EQ(slow.bucket_counts(1), 3u);
  EXPECT_EQ(slow.bucket_counts(9), 1u);
  EXPECT_EQ(slow.bucket_counts(10), 1u);
  EXPECT_EQ(slow.bucket_counts(15), 1u);
  // Bounds: the first value of each row from row 1 on, 2^k us in ms.
  EXPECT_DOUBLE_EQ(slow.explicit_bounds(0), 0.002);
  EXPECT_DOUBLE_EQ(slow.explicit_bounds(8), 0.512);
  EXPECT_DOUBLE_EQ(slow.explicit_bounds(9), 1.024);
}

TEST(OtlpConvert, BoundsFollowTheDisplayUnit) {
  auto usec = explicit_bounds_ms(1000);
  auto nsec = explicit_bounds_ms(1);
  auto msec = explicit_bounds_ms(1'000'000);
  ASSERT_EQ(usec.size(), kRows - 1u);
  for (size_t k = 0; k < usec.size(); k++) {
    double edge = std::ldexp(1.0, static_cast<int>(k + 1));
    EXPECT_DOUBLE_EQ(usec[k], edge / 1000);
    EXPECT_DOUBLE_EQ(nsec[k], edge / 1e6);
    EXPECT_DOUBLE_EQ(msec[k], edge);
  }
  // With -n the rows are nanosecond rows: the counts still equal them.
  auto report = sample_report(1);
  auto request = build_export_request(report, OtlpOptions{}, test_context(), {});
  const auto& point = find_metric(request, "function_latency_ms")->histogram().data_points(0);
  auto rows = report.functions[0].total.log2_counts();
  for (int r = 0; r < kRows; r++) EXPECT_EQ(point.bucket_counts(r), rows[r]) << "row " << r;
  EXPECT_DOUBLE_EQ(point.explicit_bounds(0), 2e-6);
}

TEST(OtlpConvert, DeltaUsesTheIntervalAndItsStart) {
  auto report = sample_report();
  OtlpOptions options;
  options.temporality = OtlpTemporality::kDelta;
  auto request = build_export_request(report, options, test_context(), {});
  const auto* metric = find_metric(request, "function_latency_ms");
  EXPECT_EQ(metric->histogram().aggregation_temporality(),
            metrics_pb::AGGREGATION_TEMPORALITY_DELTA);
  const auto& point = metric->histogram().data_points(0);
  EXPECT_EQ(point.count(), 2u);
  EXPECT_EQ(point.start_time_unix_nano(), nanos(report.interval_start));
  auto rows = report.functions[0].interval.log2_counts();
  for (int r = 0; r < kRows; r++) EXPECT_EQ(point.bucket_counts(r), rows[r]);
  const auto* lost = find_metric(request, kFunctionLostCallsMetricName);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->sum().aggregation_temporality(), metrics_pb::AGGREGATION_TEMPORALITY_DELTA);
}

TEST(OtlpConvert, PidAttributeOnlyWhenAsked) {
  auto report = sample_report();
  OtlpOptions options;
  options.pid_attribute = true;
  auto request = build_export_request(report, options, test_context(), {});
  const auto& point = find_metric(request, "function_latency_ms")->histogram().data_points(0);
  EXPECT_EQ(attributes_of(point.attributes())["pid"], "4242");
  report.functions[0].pid = 0;  // no process to name: no attribute
  request = build_export_request(report, options, test_context(), {});
  const auto& without = find_metric(request, "function_latency_ms")->histogram().data_points(0);
  EXPECT_EQ(attributes_of(without.attributes()).count("pid"), 0u);
}

// --by: a point per series, its labels as semantic-convention attributes
// on every metric of the function (the resource stays one for the run).
TEST(OtlpConvert, SeriesAreDataPointAttributes) {
  auto report = sample_report(1000, /*cpu_split=*/true);
  report.functions.resize(1);
  report.functions.push_back(report.functions[0]);
  report.functions.push_back(report.functions[0]);
  report.functions[0].series = {.pid = 1234, .comm = "target-app"};
  report.functions[1].series = {
      .cgroup =
          "/kubepods/besteffort/pod1b2f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/"
          "3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
      .container_id = "3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
      .pod_uid = "1b2f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"};
  report.functions[2].series.other = true;
  using Attributes = std::map<std::string, std::string>;
  const Attributes function = {{"symbol", "slow_op"}, {"binary", "/usr/bin/target-app"}};
  auto with = [&](Attributes more) {
    more.insert(function.begin(), function.end());
    return more;
  };
  const Attributes expected[] = {
      with({{"process.pid", "1234"}, {"process.executable.name", "target-app"}}),
      with({{"cgroup", *report.functions[1].series.cgroup},
            {"container.id", *report.functions[1].series.container_id},
            {"k8s.pod.uid", "1b2f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"}}),
      with({{"series", "other"}}),
  };
  auto request = build_export_request(report, OtlpOptions{}, test_context(), {});
  for (std::string_view name :
       {kLatencyMetricName, kOncpuMetricName, kRunnableMetricName, kBlockedMetricName}) {
    const auto* metric = find_metric(request, name);
    ASSERT_NE(metric, nullptr) << name;
    ASSERT_EQ(metric->histogram().data_points_size(), 3) << name;
    for (int i = 0; i < 3; i++) {
      const auto& attributes = metric->histogram().data_points(i).attributes();
      EXPECT_EQ(attributes_of(attributes), expected[i]) << name << " " << i;
      EXPECT_EQ(attributes.size(), expected[i].size()) << "a key twice";
    }
  }
  // process.pid is an int, as the conventions have it.
  const auto& pid = find_metric(request, kLatencyMetricName)->histogram().data_points(0);
  auto found = std::ranges::find(pid.attributes(), "process.pid", &common_pb::KeyValue::key);
  ASSERT_NE(found, pid.attributes().end());
  EXPECT_TRUE(found->value().has_int_value());
  const auto* lost = find_metric(request, kFunctionLostCallsMetricName);
  ASSERT_EQ(lost->sum().data_points_size(), 3 * 3);
  for (int i = 0; i < 9; i++) {
    auto attributes = attributes_of(lost->sum().data_points(i).attributes());
    attributes.erase("reason");
    EXPECT_EQ(attributes, expected[i / 3]) << i;
  }
  // The resource is the run's: no series attribute there.
  for (const auto& attribute : request.resource_metrics(0).resource().attributes()) {
    for (const char* key : {"process.executable.name", "cgroup", "container.id", "k8s.pod.uid"})
      EXPECT_NE(attribute.key(), key);
  }
}

TEST(OtlpConvert, ExponentialHistogramIsScaleZeroInTheDisplayUnit) {
  for (uint64_t unit_ns : {uint64_t{1000}, uint64_t{1}, uint64_t{1'000'000}}) {
    auto report = sample_report(unit_ns);
    OtlpOptions options;
    options.histogram = OtlpHistogramKind::kExponential;
    auto request = build_export_request(report, options, test_context(), {});
    std::string name = exponential_metric_name(unit_ns);
    const auto* metric = find_metric(request, name);
    ASSERT_NE(metric, nullptr) << name;
    EXPECT_EQ(metric->unit(), unit_symbol(unit_ns));
    ASSERT_TRUE(metric->has_exponential_histogram());
    EXPECT_EQ(metric->exponential_histogram().aggregation_temporality(),
              metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
    for (int i = 0; i < 2; i++) {
      const auto& point = metric->exponential_histogram().data_points(i);
      const auto& histogram = report.functions[i].total;
      auto rows = histogram.log2_counts();
      EXPECT_EQ(point.scale(), 0);
      EXPECT_DOUBLE_EQ(point.zero_threshold(), 1.0);
      EXPECT_EQ(point.count(), histogram.count());
      EXPECT_DOUBLE_EQ(point.sum(), static_cast<double>(histogram.sum_ns()) / unit_ns);
      // Index r >= 1 is console row r; row 0 is zero_count + index 0.
      std::array<uint64_t, kRows> by_row{};
      uint64_t zero_and_index0 = point.zero_count();
      for (int k = 0; k < point.positive().bucket_counts_size(); k++) {
        int index = point.positive().offset() + k;
        ASSERT_GE(index, 0);
        ASSERT_LT(index, kRows);
        if (index == 0) {
          zero_and_index0 += point.positive().bucket_counts(k);
        } else {
          by_row[index] = point.positive().bucket_counts(k);
        }
      }
      by_row[0] = zero_and_index0;
      EXPECT_EQ(by_row, rows) << name << " function " << i;
    }
  }
  EXPECT_EQ(exponential_metric_name(1000), "function_latency_us");
  EXPECT_EQ(exponential_metric_name(1), "function_latency_ns");
  EXPECT_EQ(exponential_metric_name(1'000'000), "function_latency_ms");
}

TEST(OtlpConvert, ExponentialSplitsRowZeroIntoZeroAndOneUnit) {
  Report report = sample_report();
  report.functions.resize(1);
  // usec: 0 and 999 ns are 0 us (zero bucket), 1999 ns is 1 us (index 0),
  // 5 us is row 2 (index 2).
  report.functions[0].total = testing::histogram_of({0, 999, 1999, 5000});
  OtlpOptions options;
  options.histogram = OtlpHistogramKind::kExponential;
  auto request = build_export_request(report, options, test_context(), {});
  const auto& point =
      find_metric(request, "function_latency_us")->exponential_histogram().data_points(0);
  EXPECT_EQ(point.zero_count(), 2u);
  EXPECT_EQ(point.positive().offset(), 0);
  ASSERT_EQ(point.positive().bucket_counts_size(), 3);
  EXPECT_EQ(point.positive().bucket_counts(0), 1u);
  EXPECT_EQ(point.positive().bucket_counts(1), 0u);
  EXPECT_EQ(point.positive().bucket_counts(2), 1u);
  EXPECT_DOUBLE_EQ(point.min(), 0.0);
  EXPECT_DOUBLE_EQ(point.max(), 5.0);
}

std::vector<std::string> metric_names(const otlp_pb::ExportMetricsServiceRequest& request) {
  std::vector<std::string> names;
  for (const auto& metric : request.resource_metrics(0).scope_metrics(0).metrics())
    names.push_back(metric.name());
  return names;
}

// The --cpu-split parts, with what each metric is called.
struct SplitPart {
  const char* explicit_name;
  const char* exponential_name;  // with usec
  LatencyHistogram CpuSplit::*histogram;
};
constexpr SplitPart kSplitParts[] = {
    {"function_oncpu_ms", "function_oncpu_us", &CpuSplit::oncpu},
    {"function_runnable_ms", "function_runnable_us", &CpuSplit::runnable},
    {"function_blocked_ms", "function_blocked_us", &CpuSplit::blocked},
};

TEST(OtlpConvert, CpuSplitPartsAreExportedLikeTheLatency) {
  auto report = sample_report(1000, /*cpu_split=*/true);
  for (auto kind : {OtlpHistogramKind::kExplicit, OtlpHistogramKind::kExponential}) {
    for (auto temporality : {OtlpTemporality::kCumulative, OtlpTemporality::kDelta}) {
      OtlpOptions options;
      options.histogram = kind;
      options.temporality = temporality;
      options.pid_attribute = true;
      bool exponential = kind == OtlpHistogramKind::kExponential;
      auto request = build_export_request(report, options, test_context(), {});
      for (const auto& part : kSplitParts) {
        std::string name = exponential ? part.exponential_name : part.explicit_name;
        SCOPED_TRACE(name + (temporality == OtlpTemporality::kDelta ? " delta" : " cumulative"));
        const auto* metric = find_metric(request, name);
        ASSERT_NE(metric, nullptr);
        // What the latency metric says of calls that took this part's time.
        Report as_latency = report;
        for (auto& function : as_latency.functions) {
          function.total = *function.total_split.*part.histogram;
          function.interval = *function.interval_split.*part.histogram;
        }
        auto reference_request = build_export_request(as_latency, options, test_context(), {});
        const auto* reference = find_metric(
            reference_request, exponential ? "function_latency_us" : "function_latency_ms");
        ASSERT_NE(reference, nullptr);
        EXPECT_EQ(metric->unit(), reference->unit());
        EXPECT_FALSE(metric->description().empty());
        if (exponential) {
          ASSERT_TRUE(metric->has_exponential_histogram());
          EXPECT_EQ(metric->exponential_histogram().SerializeAsString(),
                    reference->exponential_histogram().SerializeAsString());
        } else {
          ASSERT_TRUE(metric->has_histogram());
          EXPECT_EQ(metric->histogram().SerializeAsString(),
                    reference->histogram().SerializeAsString());
        }
      }
    }
  }
  // The same, literally, once: slow_op's on-CPU halves of its calls are 0,
  // 499, 999 ns, 1, 1.5, 1.5 us (row 0), 500 us (row 8), 750 us (row 9) and
  // 20 ms (row 14); runnable eighths are all in row 0 but 125 us (row 6),
  // 187.5 us (row 7) and 5 ms (row 12).
  auto request = build_export_request(report, OtlpOptions{}, test_context(), {});
  const auto& oncpu = find_metric(request, kOncpuMetricName)->histogram().data_points(0);
  EXPECT_EQ(attributes_of(oncpu.attributes()),
            (std::map<std::string, std::string>{{"symbol", "slow_op"},
                                                {"binary", "/usr/bin/target-app"}}));
  EXPECT_EQ(oncpu.count(), 9u);
  EXPECT_DOUBLE_EQ(oncpu.sum(), 21.255498);
  ASSERT_EQ(oncpu.bucket_counts_size(), kRows);
  std::array<uint64_t, kRows> expected{};
  expected[0] = 6;
  expected[8] = expected[9] = expected[14] = 1;
  for (int r = 0; r < kRows; r++) EXPECT_EQ(oncpu.bucket_counts(r), expected[r]) << r;
  EXPECT_DOUBLE_EQ(oncpu.explicit_bounds(8), 0.512);
  const auto& runnable = find_metric(request, kRunnableMetricName)->histogram().data_points(0);
  expected = {};
  expected[0] = 6;
  expected[6] = expected[7] = expected[12] = 1;
  for (int r = 0; r < kRows; r++) EXPECT_EQ(runnable.bucket_counts(r), expected[r]) << r;
  // After the latency, before the tool's health.
  EXPECT_EQ(
      metric_names(request),
      (std::vector<std::string>{
          "function_latency_ms", "function_oncpu_ms", "function_runnable_ms", "function_blocked_ms",
          std::string(kFunctionLostCallsMetricName), std::string(kRingbufDroppedMetricName),
          std::string(kFailedExportsMetricName), std::string(kDroppedRequestsMetricName)}));
}

TEST(OtlpConvert, CpuSplitMetricsOnlyForFunctionsThatHaveIt) {
  // Without --cpu-split: the metrics of before, no split ones.
  auto plain = build_export_request(sample_report(), OtlpOptions{}, test_context(), {});
  EXPECT_EQ(metric_names(plain),
            (std::vector<std::string>{
                "function_latency_ms", std::string(kFunctionLostCallsMetricName),
                std::string(kRingbufDroppedMetricName), std::string(kFailedExportsMetricName),
                std::string(kDroppedRequestsMetricName)}));
  // A function without the split has no point in them.
  auto report = sample_report(1000, /*cpu_split=*/true);
  report.functions[0].total_split.reset();
  report.functions[0].interval_split.reset();
  auto request = build_export_request(report, OtlpOptions{}, test_context(), {});
  for (const auto& part : kSplitParts) {
    const auto* metric = find_metric(request, part.explicit_name);
    ASSERT_NE(metric, nullptr) << part.explicit_name;
    ASSERT_EQ(metric->histogram().data_points_size(), 1) << part.explicit_name;
    EXPECT_EQ(attributes_of(metric->histogram().data_points(0).attributes())["symbol"], "fast_op");
  }
}

TEST(OtlpConvert, ExponentialNameFollowsTheExplicitOne) {
  EXPECT_EQ(exponential_metric_name(1000, kOncpuMetricName), "function_oncpu_us");
  EXPECT_EQ(exponential_metric_name(1, kRunnableMetricName), "function_runnable_ns");
  EXPECT_EQ(exponential_metric_name(1'000'000, kBlockedMetricName), "function_blocked_ms");
}

TEST(OtlpConvert, ResourceAndScope) {
  OtlpOptions options;
  options.service_name = "checkout";
  options.resource_attributes = {{"deployment.environment", "prod"}, {"host.name", "override"}};
  auto request = build_export_request(sample_report(), options, test_context(), {});
  ASSERT_EQ(request.resource_metrics_size(), 1);
  auto resource = attributes_of(request.resource_metrics(0).resource().attributes());
  EXPECT_EQ(resource, (std::map<std::string, std::string>{
                          {"service.name", "checkout"},
                          {"host.name", "override"},
                          {"deployment.environment", "prod"},
                          {"process.pid", "4242"},
                          {"process.executable.path", "/usr/bin/target-app"}}));
  const auto& scope = request.resource_metrics(0).scope_metrics(0).scope();
  EXPECT_EQ(scope.name(), "funclatency");
  EXPECT_EQ(scope.version(), "9.8.7");
  // No traced process: no process.* attributes.
  ExportContext no_process{.host_name = "box1", .tool_version = "1"};
  auto plain = build_export_request(sample_report(), OtlpOptions{}, no_process, {});
  auto plain_resource = attributes_of(plain.resource_metrics(0).resource().attributes());
  EXPECT_EQ(plain_resource, (std::map<std::string, std::string>{{"service.name", "funclatency"},
                                                                {"host.name", "box1"}}));
}

TEST(OtlpConvert, HealthMetrics) {
  auto report = sample_report();
  auto request = build_export_request(report, OtlpOptions{}, test_context(),
                                      {.failed_exports = 7, .dropped_requests = 2});
  const auto* lost = find_metric(request, kFunctionLostCallsMetricName);
  ASSERT_NE(lost, nullptr);
  EXPECT_TRUE(lost->sum().is_monotonic());
  EXPECT_EQ(lost->sum().aggregation_temporality(), metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  std::map<std::string, int64_t> slow_lost;
  for (const auto& point : lost->sum().data_points()) {
    auto attributes = attributes_of(point.attributes());
    if (attributes["symbol"] == "slow_op") slow_lost[attributes["reason"]] = point.as_int();
  }
  EXPECT_EQ(slow_lost,
            (std::map<std::string, int64_t>{{"unreturned", 3}, {"depth", 1}, {"ringbuf", 2}}));
  EXPECT_EQ(find_metric(request, kRingbufDroppedMetricName)->sum().data_points(0).as_int(), 2);
  EXPECT_EQ(find_metric(request, kFailedExportsMetricName)->sum().data_points(0).as_int(), 7);
  EXPECT_EQ(find_metric(request, kDroppedRequestsMetricName)->sum().data_points(0).as_int(), 2);
}

// --slowest: slow_op's run has two slow calls, its interval one.
Report report_with_slow_calls(uint64_t unit_ns = 1000, bool cpu_split = false) {
  using namespace std::chrono_literals;
  Report report = sample_report(unit_ns, cpu_split);
  auto& slow_op = report.functions[0];
  slow_op.total_slowest = {testing::slow_call(40'000'000, 4250, report.run_start + 3s, 10),
                           testing::slow_call(1'000'000, 4243, report.run_start + 10500ms, 0, "")};
  slow_op.interval_slowest = {slow_op.total_slowest[1]};
  return report;
}

// The request as a collector decodes it.
otlp_pb::ExportMetricsServiceRequest over_the_wire(
    const otlp_pb::ExportMetricsServiceRequest& sent) {
  otlp_pb::ExportMetricsServiceRequest received;
  EXPECT_TRUE(received.ParseFromString(sent.SerializeAsString()));
  return received;
}

TEST(OtlpConvert, ExemplarsAreTheRunsSlowestCallsInMs) {
  Report report = report_with_slow_calls(1000, /*cpu_split=*/true);
  auto request = over_the_wire(build_export_request(report, OtlpOptions{}, test_context(), {}));
  const auto& points = find_metric(request, "function_latency_ms")->histogram().data_points();
  ASSERT_EQ(points.size(), 2);
  ASSERT_EQ(points[0].exemplars_size(), 2);
  const auto& slowest = points[0].exemplars(0);
  EXPECT_EQ(slowest.value_case(), metrics_pb::Exemplar::kAsDouble);
  EXPECT_DOUBLE_EQ(slowest.as_double(), 40.0);  // ms, like sum and bounds
  EXPECT_EQ(slowest.time_unix_nano(), nanos(report.run_start) + 3'000'000'000);
  EXPECT_TRUE(slowest.trace_id().empty());
  EXPECT_TRUE(slowest.span_id().empty());
  EXPECT_EQ(attributes_of(slowest.filtered_attributes()),
            (std::map<std::string, std::string>{{"process.pid", "4242"},
                                                {"thread.id", "4250"},
                                                {"thread.name", "worker"},
                                                {"code.stacktrace",
                                                 "fn0+0x10 (/usr/bin/target-app)\n"
                                                 "fn1+0x11 (/usr/bin/target-app)\n"
                                                 "0x401200 (/usr/bin/target-app)\n"
                                                 "fn3+0x13 (/usr/bin/target-app)\n"
                                                 "fn4+0x14 (/usr/bin/target-app)\n"
                                                 "0x401500 (/usr/bin/target-app)\n"
                                                 "fn6+0x16 (/usr/bin/target-app)\n"
                                                 "fn7+0x17 (/usr/bin/target-app)\n"
                                                 "... 2 more"}}));
  // No thread name, no stack: no such attributes.
  const auto& other = points[0].exemplars(1);
  EXPECT_DOUBLE_EQ(other.as_double(), 1.0);
  EXPECT_EQ(attributes_of(other.filtered_attributes()),
            (std::map<std::string, std::string>{{"process.pid", "4242"}, {"thread.id", "4243"}}));
  EXPECT_EQ(points[1].exemplars_size(), 0);  // fast_op had none
  // The CPU split's histograms carry none.
  for (std::string_view name : {kOncpuMetricName, kRunnableMetricName, kBlockedMetricName}) {
    for (const auto& point : find_metric(request, name)->histogram().data_points()) {
      EXPECT_EQ(point.exemplars_size(), 0) << name;
    }
  }
}

TEST(OtlpConvert, DeltaExemplarsAreTheIntervals) {
  Report report = report_with_slow_calls();
  OtlpOptions options;
  options.temporality = OtlpTemporality::kDelta;
  auto request = over_the_wire(build_export_request(report, options, test_context(), {}));
  const auto& point = find_metric(request, "function_latency_ms")->histogram().data_points(0);
  ASSERT_EQ(point.exemplars_size(), 1);
  EXPECT_EQ(attributes_of(point.exemplars(0).filtered_attributes())["thread.id"], "4243");
}

TEST(OtlpConvert, ExponentialExemplarsAreInTheDisplayUnit) {
  for (auto [unit_ns, value] :
       {std::pair{uint64_t{1000}, 40'000.0}, std::pair{uint64_t{1}, 40'000'000.0},
        std::pair{uint64_t{1'000'000}, 40.0}}) {
    OtlpOptions options;
    options.histogram = OtlpHistogramKind::kExponential;
    auto request = over_the_wire(
        build_export_request(report_with_slow_calls(unit_ns), options, test_context(), {}));
    const auto* metric = find_metric(request, exponential_metric_name(unit_ns));
    ASSERT_NE(metric, nullptr);
    const auto& point = metric->exponential_histogram().data_points(0);
    ASSERT_EQ(point.exemplars_size(), 2);
    EXPECT_DOUBLE_EQ(point.exemplars(0).as_double(), value) << unit_ns;
  }
}

TEST(OtlpConvert, ExemplarsLeaveOutWhatThePointSays) {
  // --by pid: the point names the process already.
  Report report = report_with_slow_calls();
  report.functions[0].series.pid = 4242;
  auto request = build_export_request(report, OtlpOptions{}, test_context(), {});
  const auto& point = find_metric(request, "function_latency_ms")->histogram().data_points(0);
  ASSERT_EQ(point.exemplars_size(), 2);
  EXPECT_EQ(attributes_of(point.exemplars(1).filtered_attributes()),
            (std::map<std::string, std::string>{{"thread.id", "4243"}}));
}

}  // namespace
}  // namespace funclatency
