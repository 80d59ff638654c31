// OtlpSink against real receivers on 127.0.0.1 (HTTP via cpp-httplib, gRPC
// via grpc++), for every protocol: what arrives decodes to what the console
// shows, and faults (collector down, 503s, 400, slow) behave as promised.
#include "output/otlp/otlp_sink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "otlp_test_receiver.h"
#include "otlp_test_reports.h"

namespace funclatency {
namespace {

using namespace std::chrono_literals;
using testing::attributes_of;
using testing::OtlpTestReceiver;
using testing::ReceivedExport;
using testing::ReceiverBehavior;
using testing::sample_report;
namespace metrics_pb = opentelemetry::proto::metrics::v1;
namespace common_pb = opentelemetry::proto::common::v1;

using testing::kRows;
using Clock = std::chrono::steady_clock;

class LogCapture {
 public:
  OtlpLogFunction function() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    };
  }
  bool contains(std::string_view text) const {
    std::lock_guard lock(mutex_);
    return std::ranges::any_of(lines_, [&](const auto& l) { return l.find(text) != l.npos; });
  }
  std::string all() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

const metrics_pb::Metric* find_metric(const ReceivedExport& received, std::string_view name) {
  const auto& request = received.request;
  if (request.resource_metrics_size() == 0 ||
      request.resource_metrics(0).scope_metrics_size() == 0) {
    return nullptr;
  }
  for (const auto& metric : request.resource_metrics(0).scope_metrics(0).metrics()) {
    if (metric.name() == name) return &metric;
  }
  return nullptr;
}

int64_t sum_value(const ReceivedExport& received, std::string_view name) {
  const auto* metric = find_metric(received, name);
  if (!metric || metric->sum().data_points_size() == 0) return -1;
  return metric->sum().data_points(0).as_int();
}

// Console rows rebuilt from an exponential point: index r >= 1 is row r,
// zero_count + index 0 is row 0.
std::array<uint64_t, kRows> rows_of(const metrics_pb::ExponentialHistogramDataPoint& point) {
  std::array<uint64_t, kRows> rows{};
  rows[0] = point.zero_count();
  for (int k = 0; k < point.positive().bucket_counts_size(); k++) {
    int index = point.positive().offset() + k;
    if (index >= 0 && index < kRows) rows[index] += point.positive().bucket_counts(k);
  }
  return rows;
}

std::array<uint64_t, kRows> rows_of(const metrics_pb::HistogramDataPoint& point) {
  std::array<uint64_t, kRows> rows{};
  for (int r = 0; r < point.bucket_counts_size() && r < kRows; r++)
    rows[r] = point.bucket_counts(r);
  return rows;
}

// --by pid: slow_op of sample_report() in processes 1 and 2.
Report two_pid_series() {
  auto report = sample_report();
  report.functions.resize(1);
  report.functions.push_back(report.functions[0]);
  report.functions[0].series.pid = 1;
  report.functions[1].series.pid = 2;
  return report;
}

class OtlpSinkTest : public ::testing::TestWithParam<OtlpProtocol> {
 protected:
  bool grpc() const { return GetParam() == OtlpProtocol::kGrpc; }

  std::unique_ptr<OtlpTestReceiver> start_receiver(ReceiverBehavior behavior = {}, int port = 0) {
    if (grpc()) {
      // gRPC statuses stand in for HTTP ones: 503 -> UNAVAILABLE,
      // 400 -> INVALID_ARGUMENT.
      if (behavior.failure_status == 503) behavior.failure_status = 14;
      if (behavior.failure_status == 400) behavior.failure_status = 3;
      return testing::start_grpc_receiver(behavior, port);
    }
    return testing::start_http_receiver(behavior, port);
  }

  // A port nothing listens on (for now).
  int free_port() {
    auto receiver = start_receiver();
    int port = receiver->port();
    receiver->stop();
    return port;
  }

  OtlpOptions options_for(int port) {
    OtlpOptions options;
    options.protocol = GetParam();
    options.endpoint = "http://127.0.0.1:" + std::to_string(port) + (grpc() ? "" : "/v1/metrics");
    options.timeout = 2s;
    options.export_interval = 1h;  // only close() exports unless a test says otherwise
    options.retry = {
        .max_attempts = 5, .initial_backoff = 20ms, .max_backoff = 200ms, .multiplier = 2.0};
    return options;
  }

  // Cumulative, exporting every 100 ms.
  std::unique_ptr<OtlpSink> make_periodic_sink(const OtlpTestReceiver& receiver) {
    auto options = options_for(receiver.port());
    options.export_interval = 100ms;
    return make_sink(options);
  }

  // Delta temporality, exporting every 100 ms.
  std::unique_ptr<OtlpSink> make_delta_sink(const OtlpTestReceiver& receiver) {
    auto options = options_for(receiver.port());
    options.temporality = OtlpTemporality::kDelta;
    options.export_interval = 100ms;
    return make_sink(options);
  }

  std::unique_ptr<OtlpSink> make_sink(const OtlpOptions& options) {
    auto transport = make_otlp_transport(options);
    EXPECT_TRUE(transport.has_value());
    ExportContext context{.traced_pid = 4242,
                          .traced_executable = "/usr/bin/target-app",
                          .host_name = "test-host",
                          .tool_version = "0.1.0"};
    return std::make_unique<OtlpSink>(options, context, std::move(*transport), logs_.function());
  }

  LogCapture logs_;
};

TEST_P(OtlpSinkTest, DeliversTheConsoleRowsForBothHistogramKinds) {
  for (auto kind : {OtlpHistogramKind::kExplicit, OtlpHistogramKind::kExponential}) {
    auto receiver = start_receiver();
    ASSERT_TRUE(receiver);
    auto options = options_for(receiver->port());
    options.histogram = kind;
    auto report = sample_report();
    auto sink = make_sink(options);
    sink->write(report);
    sink->close();
    ASSERT_EQ(receiver->accepted_count(), 1u) << logs_.all();
    auto received = receiver->received().front();
    ASSERT_TRUE(received.decoded);

    const auto& resource_metrics = received.request.resource_metrics(0);
    auto resource = attributes_of(resource_metrics.resource().attributes());
    EXPECT_EQ(resource["service.name"], "funclatency");
    EXPECT_EQ(resource["host.name"], "test-host");
    EXPECT_EQ(resource["process.pid"], "4242");
    EXPECT_EQ(resource["process.executable.path"], "/usr/bin/target-app");
    EXPECT_EQ(resource_metrics.scope_metrics(0).scope().name(), "funclatency");
    EXPECT_EQ(resource_metrics.scope_metrics(0).scope().version(), "0.1.0");

    for (size_t i = 0; i < report.functions.size(); i++) {
      const auto& function = report.functions[i];
      std::array<uint64_t, kRows> rows{};
      std::map<std::string, std::string> attributes;
      uint64_t count = 0;
      if (kind == OtlpHistogramKind::kExplicit) {
        const auto* metric = find_metric(received, "function_latency_ms");
        ASSERT_NE(metric, nullptr);
        EXPECT_EQ(metric->unit(), "ms");
        EXPECT_EQ(metric->histogram().aggregation_temporality(),
                  metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
        const auto& point = metric->histogram().data_points(i);
        rows = rows_of(point);
        attributes = attributes_of(point.attributes());
        count = point.count();
        EXPECT_DOUBLE_EQ(point.explicit_bounds(9), 1.024);
      } else {
        const auto* metric = find_metric(received, "function_latency_us");
        ASSERT_NE(metric, nullptr);
        EXPECT_EQ(metric->unit(), "us");
        EXPECT_EQ(metric->exponential_histogram().aggregation_temporality(),
                  metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
        const auto& point = metric->exponential_histogram().data_points(i);
        EXPECT_EQ(point.scale(), 0);
        rows = rows_of(point);
        attributes = attributes_of(point.attributes());
        count = point.count();
      }
      EXPECT_EQ(rows, function.total.log2_counts()) << function.symbol;
      EXPECT_EQ(count, function.total.count());
      EXPECT_EQ(attributes, (std::map<std::string, std::string>{{"symbol", function.symbol},
                                                                {"binary", function.binary}}));
    }
    EXPECT_EQ(sum_value(received, kRingbufDroppedMetricName), 2);
  }
}

TEST_P(OtlpSinkTest, ExportsEveryIntervalWithoutWaitingForClose) {
  auto receiver = start_receiver();
  auto sink = make_periodic_sink(*receiver);
  auto report = sample_report();
  sink->write(report);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();
  report.functions[0].total.record(7'000'000);
  report.time += 1s;
  sink->write(report);
  ASSERT_TRUE(receiver->wait_for_accepted(2, 3s)) << logs_.all();
  sink->close();
  auto last = receiver->received().back();
  const auto* metric = find_metric(last, "function_latency_ms");
  ASSERT_NE(metric, nullptr);
  EXPECT_EQ(metric->histogram().data_points(0).count(), report.functions[0].total.count());
}

TEST_P(OtlpSinkTest, SendsHeadersAndGzip) {
  auto receiver = start_receiver();
  auto options = options_for(receiver->port());
  options.headers = {{"X-Tenant", "team-a"}};
  options.gzip = true;
  auto sink = make_sink(options);
  sink->write(sample_report());
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 1u) << logs_.all();
  auto received = receiver->received().front();
  EXPECT_EQ(received.headers["x-tenant"], "team-a");
  if (!grpc()) {
    EXPECT_EQ(received.content_encoding, "gzip");
    EXPECT_EQ(received.content_type, GetParam() == OtlpProtocol::kHttpJson
                                         ? "application/json"
                                         : "application/x-protobuf");
  }
  EXPECT_NE(find_metric(received, "function_latency_ms"), nullptr);
}

TEST_P(OtlpSinkTest, ReceiverDownAtStartThenUp) {
  int port = free_port();
  auto options = options_for(port);
  options.export_interval = 50ms;
  options.retry = {
      .max_attempts = 1000, .initial_backoff = 50ms, .max_backoff = 100ms, .multiplier = 2.0};
  auto sink = make_sink(options);
  auto report = sample_report();
  sink->write(report);
  auto waited = Clock::now() + 5s;
  while (sink->stats().failed_attempts < 2 && Clock::now() < waited)
    std::this_thread::sleep_for(20ms);
  ASSERT_GE(sink->stats().failed_attempts, 2u) << logs_.all();
  EXPECT_TRUE(logs_.contains("retrying")) << logs_.all();

  auto receiver = start_receiver({}, port);
  ASSERT_TRUE(receiver);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 5s)) << logs_.all();
  auto received = receiver->received().front();
  const auto* metric = find_metric(received, "function_latency_ms");
  ASSERT_NE(metric, nullptr);
  EXPECT_EQ(rows_of(metric->histogram().data_points(0)), report.functions[0].total.log2_counts());
  // The next request tells of the failed attempts.
  sink->write(report);
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 2u) << logs_.all();
  EXPECT_GE(sum_value(receiver->received().back(), kFailedExportsMetricName), 1);
  EXPECT_EQ(sink->stats().dropped_requests, 0u);
  EXPECT_TRUE(logs_.contains("works again")) << logs_.all();
  sink.reset();  // closes its connection before the receiver stops
}

TEST_P(OtlpSinkTest, RetriesUnavailableThenSucceeds) {
  auto receiver = start_receiver({.fail_first = 3, .failure_status = 503});
  auto options = options_for(receiver->port());
  auto sink = make_sink(options);
  sink->write(sample_report());
  sink->close();  // the final flush retries within the export timeout
  EXPECT_EQ(receiver->request_count(), 4u) << logs_.all();
  EXPECT_EQ(receiver->accepted_count(), 1u);
  auto stats = sink->stats();
  EXPECT_EQ(stats.failed_attempts, 3u);
  EXPECT_EQ(stats.requests_sent, 1u);
  EXPECT_EQ(stats.dropped_requests, 0u);
  // Backoff: attempts are spaced out, growing.
  auto received = receiver->received();
  auto gap1 = received[1].arrived - received[0].arrived;
  auto gap3 = received[3].arrived - received[2].arrived;
  EXPECT_GE(gap1, 10ms);
  EXPECT_GE(gap3, 40ms);
}

TEST_P(OtlpSinkTest, RejectionIsNotRetried) {
  auto receiver = start_receiver({.fail_first = 1000, .failure_status = 400});
  auto options = options_for(receiver->port());
  auto sink = make_sink(options);
  sink->write(sample_report());
  // close() joins the sender: nothing can send after it returns, so the
  // counts are final here.
  sink->close();
  EXPECT_EQ(receiver->request_count(), 1u);
  auto stats = sink->stats();
  EXPECT_EQ(stats.failed_attempts, 1u);
  EXPECT_EQ(stats.dropped_requests, 1u);
  EXPECT_TRUE(logs_.contains("not retried")) << logs_.all();
}

TEST_P(OtlpSinkTest, SlowReceiverNeverBlocksWriteAndCloseIsBounded) {
  auto receiver = start_receiver({.delay = 5s});
  auto options = options_for(receiver->port());
  options.timeout = 400ms;
  options.export_interval = 50ms;
  auto sink = make_sink(options);
  sink->write(sample_report());
  auto waited = Clock::now() + 3s;
  while (receiver->request_count() == 0 && Clock::now() < waited) std::this_thread::sleep_for(10ms);
  ASSERT_GE(receiver->request_count(), 1u);
  // The sender is stuck in a request; writes still return at once.
  auto report = sample_report();
  auto before = Clock::now();
  for (int i = 0; i < 200; i++) sink->write(report);
  EXPECT_LT(Clock::now() - before, 100ms);

  auto closing = Clock::now();
  sink->close();
  auto took = Clock::now() - closing;
  EXPECT_LT(took, options.timeout + 600ms);  // slack for a loaded CI machine
  EXPECT_GE(sink->stats().failed_attempts, 1u);
  receiver->stop();
}

TEST_P(OtlpSinkTest, CloseWithPendingExportReturnsWithinTheTimeout) {
  auto receiver = start_receiver({.delay = 10s});
  auto options = options_for(receiver->port());
  options.timeout = 500ms;
  auto sink = make_sink(options);
  sink->write(sample_report());
  auto closing = Clock::now();
  sink->close();
  auto took = Clock::now() - closing;
  EXPECT_LT(took, options.timeout + 600ms);  // slack for a loaded CI machine
  EXPECT_EQ(receiver->request_count(), 1u);  // the export did start
  EXPECT_EQ(sink->stats().requests_sent, 0u);
  EXPECT_EQ(sink->stats().dropped_requests, 1u);
  EXPECT_TRUE(logs_.contains("could not be delivered")) << logs_.all();
  receiver->stop();
}

TEST_P(OtlpSinkTest, CloseAgainstADeadCollectorReturnsWithinTheTimeout) {
  auto options = options_for(free_port());
  options.timeout = 500ms;
  auto sink = make_sink(options);
  sink->write(sample_report());
  auto closing = Clock::now();
  sink->close();
  EXPECT_LT(Clock::now() - closing, options.timeout + 600ms);  // slack for a loaded CI machine
  EXPECT_GE(sink->stats().failed_attempts, 1u);
}

TEST_P(OtlpSinkTest, PartialSuccessIsLogged) {
  auto receiver = start_receiver({.partial_rejected = 2, .partial_message = "2 points too old"});
  auto sink = make_sink(options_for(receiver->port()));
  sink->write(sample_report());
  sink->close();
  EXPECT_EQ(receiver->accepted_count(), 1u);
  EXPECT_TRUE(logs_.contains("rejected 2 data point(s): 2 points too old")) << logs_.all();
}

TEST_P(OtlpSinkTest, DeltaIsTheChangeOfTotalsBetweenExports) {
  auto receiver = start_receiver();
  auto sink = make_delta_sink(*receiver);
  auto nanos = [](auto t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };

  // First export: the run so far.
  auto first = sample_report();
  sink->write(first);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();

  // Then new calls, reported three times over (an interval report, a live
  // snapshot, the final total): they count once.
  auto later = first;
  later.interval_start = first.time;
  later.time = first.time + 5s;
  LatencyHistogram new_calls = testing::histogram_of({40'000'000, 2000, 2500});
  later.functions[0].interval = new_calls;
  later.functions[0].total.merge(new_calls);
  later.functions[0].total_lost.unreturned += 4;
  auto snapshot = later;
  auto total = later;
  total.kind = Report::Kind::kTotal;
  sink->write(later);
  sink->write(snapshot);
  sink->write(total);
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 2u) << logs_.all();
  auto received = receiver->received();

  const auto* first_metric = find_metric(received[0], "function_latency_ms");
  ASSERT_NE(first_metric, nullptr);
  EXPECT_EQ(first_metric->histogram().aggregation_temporality(),
            metrics_pb::AGGREGATION_TEMPORALITY_DELTA);
  const auto& first_point = first_metric->histogram().data_points(0);
  EXPECT_EQ(first_point.count(), first.functions[0].total.count());
  EXPECT_EQ(rows_of(first_point), first.functions[0].total.log2_counts());
  EXPECT_EQ(first_point.start_time_unix_nano(), nanos(first.run_start));
  EXPECT_EQ(first_point.time_unix_nano(), nanos(first.time));

  const auto& second_point =
      find_metric(received[1], "function_latency_ms")->histogram().data_points(0);
  EXPECT_EQ(second_point.count(), 3u);
  EXPECT_EQ(rows_of(second_point), new_calls.log2_counts());
  EXPECT_EQ(second_point.start_time_unix_nano(), nanos(first.time));
  EXPECT_EQ(second_point.time_unix_nano(), nanos(later.time));
  // The report's interval held exactly the new calls, so min/max are known.
  ASSERT_TRUE(second_point.has_min());
  EXPECT_DOUBLE_EQ(second_point.min(), 0.002);
  EXPECT_DOUBLE_EQ(second_point.max(), 40.0);
  // The other function had no new calls: an empty delta.
  EXPECT_EQ(find_metric(received[1], "function_latency_ms")->histogram().data_points(1).count(),
            0u);
  const auto* lost = find_metric(received[1], kFunctionLostCallsMetricName);
  ASSERT_NE(lost, nullptr);
  for (const auto& point : lost->sum().data_points()) {
    auto attributes = attributes_of(point.attributes());
    if (attributes["symbol"] == "slow_op" && attributes["reason"] == "unreturned") {
      EXPECT_EQ(point.as_int(), 4);
    }
  }
}

TEST_P(OtlpSinkTest, DeltaKeepsTheSeriesOfAFunctionApart) {
  auto receiver = start_receiver();
  auto sink = make_delta_sink(*receiver);
  // --by pid: slow_op in two processes, with different totals.
  auto first = two_pid_series();
  first.functions[1].total = testing::histogram_of({3000, 5000});
  sink->write(first);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();

  // New calls in process 2 only.
  auto later = first;
  later.interval_start = first.time;
  later.time = first.time + 5s;
  LatencyHistogram new_calls = testing::histogram_of({40'000'000, 2000, 2500});
  later.functions[0].interval = LatencyHistogram(1000);
  later.functions[1].interval = new_calls;
  later.functions[1].total.merge(new_calls);
  sink->write(later);
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 2u) << logs_.all();
  auto received = receiver->received();
  const auto* metric = find_metric(received[1], "function_latency_ms");
  ASSERT_NE(metric, nullptr);
  std::map<std::string, uint64_t> count_by_pid;
  for (const auto& point : metric->histogram().data_points()) {
    count_by_pid[attributes_of(point.attributes())["process.pid"]] = point.count();
  }
  EXPECT_EQ(count_by_pid, (std::map<std::string, uint64_t>{{"1", 0}, {"2", 3}}));
}

// A series' last report (it ended) superseded by a snapshot without it
// before an export: its last totals are exported anyway, once.
TEST_P(OtlpSinkTest, AnEndedSeriesIsExportedOnceThoughSuperseded) {
  auto receiver = start_receiver();
  auto sink = make_periodic_sink(*receiver);
  auto last = two_pid_series();
  last.functions[0].series_ended = true;
  auto without = last;
  without.functions.erase(without.functions.begin());
  sink->write(last);
  sink->write(without);  // before the first export
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();
  sink->write(without);
  sink->close();
  auto pids_in = [](const ReceivedExport& received) {
    std::set<std::string> pids;
    const auto* metric = find_metric(received, "function_latency_ms");
    if (!metric) return pids;
    for (const auto& point : metric->histogram().data_points()) {
      pids.insert(attributes_of(point.attributes())["process.pid"]);
    }
    return pids;
  };
  auto received = receiver->received();
  ASSERT_GE(received.size(), 2u) << logs_.all();
  EXPECT_EQ(pids_in(received.front()), (std::set<std::string>{"1", "2"}));
  EXPECT_EQ(pids_in(received.back()), (std::set<std::string>{"2"}));
}

TEST_P(OtlpSinkTest, DeltaWithoutAMatchingIntervalLeavesMinMaxOut) {
  auto receiver = start_receiver();
  auto sink = make_delta_sink(*receiver);
  auto first = sample_report();
  sink->write(first);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();
  // Two new calls, but the report's interval (begun before the previous
  // export) holds other calls too: the minimum of the two is unknown.
  auto later = first;
  later.time = first.time + 5s;
  LatencyHistogram new_calls = testing::histogram_of({5000, 9000});
  later.functions[0].total.merge(new_calls);
  later.functions[0].interval.merge(new_calls);
  sink->write(later);
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 2u) << logs_.all();
  auto received = receiver->received();
  const auto& point = find_metric(received[1], "function_latency_ms")->histogram().data_points(0);
  EXPECT_EQ(point.count(), 2u);
  EXPECT_EQ(rows_of(point), new_calls.log2_counts());
  EXPECT_DOUBLE_EQ(point.sum(), 0.014);
  EXPECT_FALSE(point.has_min());
  EXPECT_FALSE(point.has_max());
}

TEST_P(OtlpSinkTest, DeltaExemplarsAreTheSlowCallsSinceThePreviousExport) {
  auto receiver = start_receiver();
  auto sink = make_delta_sink(*receiver);
  auto first = sample_report();
  SlowCall before = testing::slow_call(40'000'000, 11, first.time - 500ms, 3);
  first.functions[0].total_slowest = {before};
  first.functions[0].interval_slowest = {before};
  sink->write(first);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();

  // An interval begun before that export: it holds a call the first export
  // already counted (slower than the new ones) and a new one; the run's
  // slowest hold the first export's call and another new one.
  auto later = first;
  later.time = first.time + 5s;
  LatencyHistogram new_calls = testing::histogram_of({5000, 9000});
  later.functions[0].total.merge(new_calls);
  later.functions[0].interval.merge(new_calls);
  SlowCall counted = testing::slow_call(30'000'000, 12, first.time - 200ms);
  SlowCall fresh = testing::slow_call(9000, 13, first.time + 2s);
  SlowCall fresh_too = testing::slow_call(5000, 14, first.time + 3s);
  later.functions[0].total_slowest = {before, counted, fresh};
  later.functions[0].interval_slowest = {counted, fresh, fresh_too};
  sink->write(later);
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 2u) << logs_.all();
  auto received = receiver->received();
  const auto& first_point =
      find_metric(received[0], "function_latency_ms")->histogram().data_points(0);
  ASSERT_EQ(first_point.exemplars_size(), 1);
  EXPECT_DOUBLE_EQ(first_point.exemplars(0).as_double(), 40.0);
  EXPECT_EQ(attributes_of(first_point.exemplars(0).filtered_attributes())["code.stacktrace"],
            "fn0+0x10 (/usr/bin/target-app)\nfn1+0x11 (/usr/bin/target-app)\n0x401200");
  const auto& second_point =
      find_metric(received[1], "function_latency_ms")->histogram().data_points(0);
  EXPECT_EQ(second_point.count(), 2u);
  std::vector<std::string> threads;
  for (const auto& exemplar : second_point.exemplars()) {
    threads.push_back(attributes_of(exemplar.filtered_attributes())["thread.id"]);
  }
  EXPECT_EQ(threads, (std::vector<std::string>{"13", "14"}));
}

TEST_P(OtlpSinkTest, DeltaOfTheCpuSplitIsTheChangeOfItsTotals) {
  auto receiver = start_receiver();
  auto sink = make_delta_sink(*receiver);
  auto first = sample_report(1000, /*cpu_split=*/true);
  sink->write(first);
  ASSERT_TRUE(receiver->wait_for_accepted(1, 3s)) << logs_.all();

  // New calls in the totals; the report's interval began before the
  // previous export, so the change comes from the totals.
  auto later = first;
  later.time = first.time + 5s;
  auto add_calls = [](FunctionReport& function, std::initializer_list<uint64_t> durations) {
    CpuSplit split = testing::split_of(durations);
    function.total.merge(testing::histogram_of(durations));
    function.total_split->oncpu.merge(split.oncpu);
    function.total_split->runnable.merge(split.runnable);
    function.total_split->blocked.merge(split.blocked);
  };
  add_calls(later.functions[0], {40'000'000, 2000, 2500});
  sink->write(later);
  ASSERT_TRUE(receiver->wait_for_accepted(2, 3s)) << logs_.all();

  // Then a report whose interval holds exactly the new calls: its split
  // goes as it is, min and max included.
  auto last = later;
  last.interval_start = later.time;
  last.time = later.time + 5s;
  add_calls(last.functions[0], {8000});
  last.functions[0].interval = testing::histogram_of({8000});
  last.functions[0].interval_split = testing::split_of({8000});
  sink->write(last);
  sink->close();
  ASSERT_EQ(receiver->accepted_count(), 3u) << logs_.all();
  auto received = receiver->received();

  CpuSplit changed = testing::split_of({40'000'000, 2000, 2500});
  const std::pair<std::string_view, const LatencyHistogram*> parts[] = {
      {kOncpuMetricName, &changed.oncpu},
      {kRunnableMetricName, &changed.runnable},
      {kBlockedMetricName, &changed.blocked}};
  for (const auto& [name, expected] : parts) {
    const auto* metric = find_metric(received[1], name);
    ASSERT_NE(metric, nullptr) << name;
    EXPECT_EQ(metric->histogram().aggregation_temporality(),
              metrics_pb::AGGREGATION_TEMPORALITY_DELTA);
    const auto& point = metric->histogram().data_points(0);
    EXPECT_EQ(point.count(), 3u) << name;
    EXPECT_EQ(rows_of(point), expected->log2_counts()) << name;
    EXPECT_DOUBLE_EQ(point.sum(), expected->sum_ns() / 1e6) << name;
    EXPECT_FALSE(point.has_min()) << name;
    EXPECT_EQ(metric->histogram().data_points(1).count(), 0u) << name;  // fast_op: no new calls
  }
  // 40 ms / 8 = 5 ms waiting for a CPU: row 12.
  EXPECT_EQ(rows_of(find_metric(received[1], kRunnableMetricName)->histogram().data_points(0))[12],
            1u);

  const auto& oncpu = find_metric(received[2], kOncpuMetricName)->histogram().data_points(0);
  EXPECT_EQ(oncpu.count(), 1u);
  ASSERT_TRUE(oncpu.has_min());
  EXPECT_DOUBLE_EQ(oncpu.min(), 0.004);
  EXPECT_DOUBLE_EQ(oncpu.max(), 0.004);
}

TEST_P(OtlpSinkTest, QueueIsBoundedAndDropsAreExported) {
  int port = free_port();
  auto options = options_for(port);
  options.export_interval = 20ms;
  options.queue_capacity = 2;
  // The head keeps waiting on a long backoff while new requests pile up.
  options.retry = {
      .max_attempts = 1000, .initial_backoff = 300ms, .max_backoff = 300ms, .multiplier = 1.0};
  auto sink = make_sink(options);
  auto report = sample_report();
  auto waited = Clock::now() + 5s;
  while (sink->stats().dropped_requests < 3 && Clock::now() < waited) {
    sink->write(report);
    std::this_thread::sleep_for(10ms);
  }
  auto stats = sink->stats();
  EXPECT_GE(stats.dropped_requests, 3u);
  EXPECT_GE(stats.requests_built, stats.dropped_requests + 1);
  EXPECT_TRUE(logs_.contains("queue is full")) << logs_.all();

  auto receiver = start_receiver({}, port);
  ASSERT_TRUE(receiver);
  // Requests built after the drops carry the exporter's own counters.
  waited = Clock::now() + 5s;
  int64_t dropped_seen = 0;
  while (dropped_seen < 3 && Clock::now() < waited) {
    sink->write(report);
    std::this_thread::sleep_for(20ms);
    for (const auto& received : receiver->received()) {
      dropped_seen = std::max(dropped_seen, sum_value(received, kDroppedRequestsMetricName));
    }
  }
  EXPECT_GE(dropped_seen, 3);
  sink.reset();
}

INSTANTIATE_TEST_SUITE_P(Protocols, OtlpSinkTest,
                         ::testing::Values(OtlpProtocol::kHttpProtobuf, OtlpProtocol::kHttpJson,
                                           OtlpProtocol::kGrpc),
                         [](const auto& info) {
                           switch (info.param) {
                             case OtlpProtocol::kHttpProtobuf:
                               return std::string("HttpProtobuf");
                             case OtlpProtocol::kHttpJson:
                               return std::string("HttpJson");
                             case OtlpProtocol::kGrpc:
                               return std::string("Grpc");
                           }
                           return std::string("Unknown");
                         });

TEST(OtlpSinkHttp, HonoursRetryAfter) {
  auto receiver =
      testing::start_http_receiver({.fail_first = 1, .failure_status = 429, .retry_after = "1"});
  OtlpOptions options;
  options.endpoint = "http://127.0.0.1:" + std::to_string(receiver->port()) + "/v1/metrics";
  options.timeout = 3s;
  options.export_interval = 1h;
  options.retry = {
      .max_attempts = 5, .initial_backoff = 10ms, .max_backoff = 50ms, .multiplier = 2.0};
  auto transport = make_otlp_transport(options);
  ASSERT_TRUE(transport);
  OtlpSink sink(options, ExportContext{}, std::move(*transport), nullptr);
  sink.write(sample_report());
  sink.close();
  auto received = receiver->received();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_GE(received[1].arrived - received[0].arrived, 950ms);
  EXPECT_EQ(receiver->accepted_count(), 1u);
}

}  // namespace
}  // namespace funclatency
