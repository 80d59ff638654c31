// The exposition text: names, buckets, escaping, both formats.
#include "output/prometheus/exposition.h"

#include <gtest/gtest.h>

#include <sstream>

#include "openmetrics_check.h"
#include "output/sink_fanout.h"

namespace funclatency {
namespace {

FunctionReport function_with(std::string symbol, std::initializer_list<uint64_t> durations_ns,
                             uint64_t unit_ns = 1000) {
  FunctionReport function;
  function.symbol = std::move(symbol);
  function.binary = "/usr/bin/target-app";
  function.mode = AggregationMode::kEvents;
  function.interval = LatencyHistogram(unit_ns);
  function.total = LatencyHistogram(unit_ns);
  for (uint64_t ns : durations_ns) function.total.record(ns);
  return function;
}

using testing::lines_of;

std::vector<std::string> lines_starting_with(const std::string& text, std::string_view prefix) {
  std::vector<std::string> found;
  for (auto& line : lines_of(text)) {
    if (line.starts_with(prefix)) found.push_back(line);
  }
  return found;
}

// The value of the sample line that starts with `series` (name and labels).
uint64_t sample_value(const std::string& text, const std::string& series) {
  auto found = lines_starting_with(text, series + " ");
  EXPECT_EQ(found.size(), 1u) << series;
  if (found.size() != 1) return UINT64_MAX;
  return std::stoull(found[0].substr(series.size() + 1));
}

std::string le_of(const std::string& bucket_line) {
  size_t start = bucket_line.find("le=\"") + 4;
  return bucket_line.substr(start, bucket_line.find('"', start) - start);
}

TEST(FormatNsAsMs, IsExactDecimal) {
  EXPECT_EQ(format_ns_as_ms(0), "0");
  EXPECT_EQ(format_ns_as_ms(1), "0.000001");
  EXPECT_EQ(format_ns_as_ms(2000), "0.002");
  EXPECT_EQ(format_ns_as_ms(1024000), "1.024");
  EXPECT_EQ(format_ns_as_ms(3000000), "3");
  EXPECT_EQ(format_ns_as_ms(kMaxBucketEdgeNs), "4294967.296");
}

TEST(ExposedRows, CoverUpToTheSameDurationInEveryUnit) {
  auto usec = exposed_log2_rows(1000);
  ASSERT_EQ(usec.size(), 32u);  // 2 us .. 2^32 us
  EXPECT_EQ(usec.front(), 0u);
  EXPECT_EQ(usec.back(), 31u);
  EXPECT_EQ(exposed_log2_rows(1).size(), 41u);        // 2 ns .. 2^41 ns
  EXPECT_EQ(exposed_log2_rows(1000000).size(), 22u);  // 2 ms .. 2^22 ms
}

TEST(EscapeLabelValue, EscapesQuotesBackslashesNewlines) {
  EXPECT_EQ(escape_label_value(R"(operator""_km(char const*))"), R"(operator\"\"_km(char const*))");
  EXPECT_EQ(escape_label_value("a\\b\nc"), "a\\\\b\\nc");
  EXPECT_EQ(escape_label_value("std::vector<int>::push_back"), "std::vector<int>::push_back");
}

TEST(EscapeLabelValue, ReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(escape_label_value("caf\xC3\xA9"), "caf\xC3\xA9");  // é stays
  EXPECT_EQ(escape_label_value("x\xFFy"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(escape_label_value("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(escape_label_value("\xED\xA0\x80"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a UTF-16 surrogate
  EXPECT_EQ(escape_label_value("cut\xE2\x82"), "cut\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Exposition, HistogramBucketsAreTheConsoleRowsCumulative) {
  Report report;
  // 1 us, 3 us (row 1), 5 and 6 us (row 2), 700 us (row 9), 2.5 s (row 21).
  report.functions.push_back(
      function_with("slow_op", {1000, 3000, 5000, 6999, 700000, 2500000000}));
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  std::string series = R"({symbol="slow_op",binary="/usr/bin/target-app")";

  auto buckets = lines_starting_with(text, "ebpf_function_latency_ms_bucket{");
  ASSERT_EQ(buckets.size(), 33u);  // 32 finite edges + Inf
  EXPECT_EQ(le_of(buckets.front()), "0.002");
  EXPECT_EQ(le_of(buckets[9]), "1.024");
  EXPECT_EQ(le_of(buckets[31]), "4294967.296");
  EXPECT_EQ(le_of(buckets.back()), "+Inf");

  // Each bucket's increase over the previous one is the console row's count.
  auto rows = report.functions[0].total.log2_counts();
  uint64_t previous = 0;
  for (uint32_t row = 0; row < 32; row++) {
    std::string edge = format_ns_as_ms((uint64_t{2} << row) * 1000);
    uint64_t cumulative =
        sample_value(text, "ebpf_function_latency_ms_bucket" + series + ",le=\"" + edge + "\"}");
    EXPECT_EQ(cumulative - previous, rows[row]) << "row " << row;
    previous = cumulative;
  }
  EXPECT_EQ(sample_value(text, "ebpf_function_latency_ms_bucket" + series + R"(,le="0.002"})"), 1u);
  EXPECT_EQ(sample_value(text, "ebpf_function_latency_ms_bucket" + series + R"(,le="0.008"})"), 4u);
  EXPECT_EQ(sample_value(text, "ebpf_function_latency_ms_bucket" + series + R"(,le="1.024"})"), 5u);
  EXPECT_EQ(sample_value(text, "ebpf_function_latency_ms_bucket" + series + R"(,le="+Inf"})"), 6u);
  EXPECT_EQ(sample_value(text, "ebpf_function_latency_ms_count" + series + "}"), 6u);
  auto sum = lines_starting_with(text, "ebpf_function_latency_ms_sum" + series + "} ");
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(sum[0], "ebpf_function_latency_ms_sum" + series + "} 2500.715999");
}

TEST(Exposition, CallsLongerThanTheLastEdgeCountOnlyInInf) {
  Report report;
  report.functions.push_back(function_with("hang", {5000ull * 1000 * 1000 * 1000}));  // 83 min
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  auto buckets = lines_starting_with(text, "ebpf_function_latency_ms_bucket{");
  EXPECT_TRUE(buckets[31].ends_with(" 0")) << buckets[31];
  EXPECT_TRUE(buckets[32].ends_with(" 1")) << buckets[32];
}

TEST(Exposition, EdgesDoNotDependOnTheData) {
  Report empty, busy;
  empty.functions.push_back(function_with("f", {}));
  busy.functions.push_back(function_with("f", {1, 10000, 123456789, 9000000000}));
  auto edges = [](const Report& report) {
    std::vector<std::string> les;
    for (auto& line :
         lines_starting_with(render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf"),
                             "ebpf_function_latency_ms_bucket{")) {
      les.push_back(le_of(line));
    }
    return les;
  };
  EXPECT_EQ(edges(empty), edges(busy));
  EXPECT_EQ(edges(empty).size(), 33u);
}

TEST(Exposition, MillisecondAndNanosecondUnitsUseTheirOwnRows) {
  Report msec, nsec;
  msec.functions.push_back(function_with("f", {3000000}, 1000000));  // 3 ms: row 1
  nsec.functions.push_back(function_with("f", {3}, 1));              // 3 ns: row 1
  auto msec_buckets =
      lines_starting_with(render_exposition(msec, ExpositionFormat::kPrometheusText, "ebpf"),
                          "ebpf_function_latency_ms_bucket{");
  auto nsec_buckets =
      lines_starting_with(render_exposition(nsec, ExpositionFormat::kPrometheusText, "ebpf"),
                          "ebpf_function_latency_ms_bucket{");
  ASSERT_EQ(msec_buckets.size(), 23u);
  EXPECT_EQ(le_of(msec_buckets[0]), "2");
  EXPECT_TRUE(msec_buckets[0].ends_with(" 0"));
  EXPECT_EQ(le_of(msec_buckets[1]), "4");
  EXPECT_TRUE(msec_buckets[1].ends_with(" 1"));
  ASSERT_EQ(nsec_buckets.size(), 42u);
  EXPECT_EQ(le_of(nsec_buckets[1]), "0.000004");
  EXPECT_TRUE(nsec_buckets[1].ends_with(" 1"));
}

TEST(Exposition, BucketsStayCumulativeWhenRowsOutrunTheCount) {
  // Kernel counters read mid-update: the rows hold one call more than count.
  LatencyHistogram calls(1000);
  for (uint64_t ns : {10000, 10000, 100000}) calls.record(ns);
  FunctionReport function = function_with("racy", {});
  function.total.add_counts(calls.buckets(), /*count=*/2, /*sum_ns=*/20000, 10000, 10000);
  Report report;
  report.functions.push_back(function);
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  uint64_t previous = 0;
  for (auto& line : lines_starting_with(text, "ebpf_function_latency_ms_bucket{")) {
    uint64_t value = std::stoull(line.substr(line.rfind(' ') + 1));
    EXPECT_GE(value, previous) << line;
    EXPECT_LE(value, 2u) << line;
    previous = value;
  }
  EXPECT_EQ(previous, 2u);
}

TEST(Exposition, HasHelpAndTypeForEveryFamilyInTextFormat) {
  Report report;
  report.functions.push_back(function_with("slow_op", {1000}));
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  auto help = lines_starting_with(text, "# HELP ");
  auto type = lines_starting_with(text, "# TYPE ");
  ASSERT_EQ(type.size(), 3u);
  EXPECT_EQ(type[0], "# TYPE ebpf_function_latency_ms histogram");
  EXPECT_EQ(type[1], "# TYPE ebpf_function_lost_calls_total counter");
  EXPECT_EQ(type[2], "# TYPE ebpf_ringbuf_dropped_calls_total counter");
  ASSERT_EQ(help.size(), 3u);
  EXPECT_TRUE(help[1].starts_with("# HELP ebpf_function_lost_calls_total "));
  EXPECT_TRUE(lines_starting_with(text, "# UNIT").empty());
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(Exposition, LostCallsByReasonAndRingBufferDrops) {
  Report report;
  FunctionReport function = function_with("thrower", {1000});
  function.total_lost = LostCounts{.unreturned = 7, .depth = 2, .ringbuf = 3};
  function.interval_lost = LostCounts{.unreturned = 1};  // not exposed: cumulative only
  report.functions.push_back(function);
  report.ringbuf_dropped_total = 3;
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  std::string series =
      R"(ebpf_function_lost_calls_total{symbol="thrower",binary="/usr/bin/target-app",reason=)";
  EXPECT_EQ(sample_value(text, series + R"("unreturned"})"), 7u);
  EXPECT_EQ(sample_value(text, series + R"("depth"})"), 2u);
  EXPECT_EQ(sample_value(text, series + R"("ringbuf"})"), 3u);
  EXPECT_EQ(sample_value(text, "ebpf_ringbuf_dropped_calls_total"), 3u);
}

TEST(Exposition, OpenMetricsNamesFamiliesAndEndsWithEof) {
  Report report;
  report.functions.push_back(function_with("slow_op", {1000}));
  std::string text = render_exposition(report, ExpositionFormat::kOpenMetrics, "ebpf");
  auto lines = lines_of(text);
  EXPECT_EQ(lines.back(), "# EOF");
  EXPECT_EQ(text.back(), '\n');
  auto type = lines_starting_with(text, "# TYPE ");
  ASSERT_EQ(type.size(), 3u);
  EXPECT_EQ(type[0], "# TYPE ebpf_function_latency_ms histogram");
  EXPECT_EQ(type[1], "# TYPE ebpf_function_lost_calls counter");
  EXPECT_EQ(type[2], "# TYPE ebpf_ringbuf_dropped_calls counter");
  // The unit must be the family name's suffix.
  EXPECT_EQ(lines_starting_with(text, "# UNIT "),
            std::vector<std::string>{"# UNIT ebpf_function_latency_ms ms"});
  EXPECT_TRUE(lines_starting_with(text, "# HELP ebpf_function_lost_calls_total").empty());
  EXPECT_EQ(lines_starting_with(text, "ebpf_function_lost_calls_total{").size(), 3u);
  EXPECT_EQ(sample_value(text, "ebpf_ringbuf_dropped_calls_total"), 0u);
  // Samples are the same as in the text format; only metadata differs.
  std::string plain = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_EQ(lines_starting_with(text, "ebpf_"), lines_starting_with(plain, "ebpf_"));
}

TEST(Exposition, PrefixNamesEveryMetric) {
  Report report;
  report.functions.push_back(function_with("f", {1000}));
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "shop_api");
  for (auto& line : lines_of(text)) {
    std::string name = line.starts_with("# ") ? line.substr(7) : line;
    EXPECT_TRUE(name.starts_with("shop_api_")) << line;
  }
  std::string bare = render_exposition(report, ExpositionFormat::kPrometheusText, "");
  EXPECT_EQ(lines_starting_with(bare, "function_latency_ms_count{").size(), 1u);
}

TEST(Exposition, PidIsALabelWhenTracingOneProcess) {
  Report report;
  FunctionReport function = function_with("f", {1000});
  function.pid = 4242;
  report.functions.push_back(function);
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_EQ(
      sample_value(
          text,
          R"(ebpf_function_latency_ms_count{symbol="f",binary="/usr/bin/target-app",pid="4242"})"),
      1u);
}

TEST(Exposition, EscapesLabelValuesInSamples) {
  Report report;
  FunctionReport function = function_with(R"(operator""_q)", {1000});
  function.binary = "/opt/we\"ird\\dir/app";
  report.functions.push_back(function);
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_EQ(
      sample_value(
          text,
          R"(ebpf_function_latency_ms_count{symbol="operator\"\"_q",binary="/opt/we\"ird\\dir/app"})"),
      1u);
}

TEST(Exposition, FunctionsWithTheSameLabelsAreOneSeries) {
  Report report;
  report.functions.push_back(function_with("helper", {1000, 2000}));
  report.functions.push_back(function_with("helper", {3000}));
  report.functions.push_back(function_with("other", {3000}));
  auto snapshot = snapshot_of(report);
  ASSERT_EQ(snapshot.functions.size(), 2u);
  EXPECT_EQ(snapshot.functions[0].count, 3u);
  EXPECT_EQ(snapshot.functions[0].sum_ns, 6000u);
  std::string text = render_exposition(snapshot, ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_EQ(lines_starting_with(text, "ebpf_function_latency_ms_count{").size(), 2u);
}

// Names are made valid before any sink sees them (output/sink_fanout.h), so
// two raw names that are exposed alike are one series, not a duplicate.
TEST(Exposition, NamesThatReadAlikeOnceValidAreOneSeries) {
  Report report;
  report.functions.push_back(function_with("odd_op\xFF", {1000, 2000}));
  report.functions.push_back(function_with("odd_op\xFE", {3000}));
  report.functions[1].binary = report.functions[0].binary = "/tmp/odd\xFF/app";
  ASSERT_TRUE(make_names_valid(report));
  std::string text =
      render_exposition(snapshot_of(report), ExpositionFormat::kPrometheusText, "ebpf");
  auto counts = lines_starting_with(text, "ebpf_function_latency_ms_count{");
  ASSERT_EQ(counts.size(), 1u) << text;
  EXPECT_EQ(counts[0],
            "ebpf_function_latency_ms_count{symbol=\"odd_op\xEF\xBF\xBD\","
            "binary=\"/tmp/odd\xEF\xBF\xBD/app\"} 3");
}

TEST(Exposition, EmptyReportStillDescribesTheMetrics) {
  std::string text = render_exposition(Report{}, ExpositionFormat::kOpenMetrics, "ebpf");
  EXPECT_EQ(lines_starting_with(text, "# TYPE ").size(), 3u);
  EXPECT_TRUE(lines_starting_with(text, "ebpf_function_").empty());
  EXPECT_EQ(sample_value(text, "ebpf_ringbuf_dropped_calls_total"), 0u);
}

// A function whose calls took {on-CPU, runnable, blocked} ns each, with
// --cpu-split.
FunctionReport function_with_split(std::string symbol,
                                   std::initializer_list<std::array<uint64_t, 3>> calls) {
  FunctionReport function = function_with(std::move(symbol), {});
  CpuSplit split{LatencyHistogram(1000), LatencyHistogram(1000), LatencyHistogram(1000)};
  for (const auto& [oncpu, runnable, blocked] : calls) {
    function.total.record(oncpu + runnable + blocked);
    split.oncpu.record(oncpu);
    split.runnable.record(runnable);
    split.blocked.record(blocked);
  }
  function.total_split = split;
  return function;
}

TEST(Exposition, CpuSplitFamiliesAreHistogramsLikeTheLatency) {
  Report report;
  report.functions.push_back(function_with_split(
      "slow_op", {{1000, 0, 5000}, {3000, 700000, 0}, {12000, 2000, 2500000000}}));
  report.functions.push_back(function_with_split("fast_op", {{500, 0, 0}}));
  report.functions.back().pid = 17;
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    std::string text = render_exposition(report, format, "ebpf");
    const std::pair<std::string, LatencyHistogram CpuSplit::*> parts[] = {
        {"oncpu", &CpuSplit::oncpu},
        {"runnable", &CpuSplit::runnable},
        {"blocked", &CpuSplit::blocked}};
    for (const auto& [part, histogram] : parts) {
      // The samples the latency family would have for calls that took this
      // part's time, renamed.
      Report as_latency = report;
      for (auto& function : as_latency.functions) function.total = *function.total_split.*histogram;
      std::string family = "ebpf_function_" + part + "_ms";
      std::vector<std::string> expected;
      for (auto& line : lines_starting_with(render_exposition(as_latency, format, "ebpf"),
                                            "ebpf_function_latency_ms_")) {
        expected.push_back(family + line.substr(std::string("ebpf_function_latency_ms").size()));
      }
      EXPECT_EQ(lines_starting_with(text, family + "_"), expected) << part;
      EXPECT_EQ(lines_starting_with(text, family + "_bucket{").size(), 2 * 33u) << part;
      EXPECT_EQ(lines_starting_with(text, "# TYPE " + family + " "),
                std::vector<std::string>{"# TYPE " + family + " histogram"});
      EXPECT_EQ(lines_starting_with(text, "# HELP " + family + " ").size(), 1u) << part;
      EXPECT_EQ(lines_starting_with(text, "# UNIT " + family + " ").size(),
                format == ExpositionFormat::kOpenMetrics ? 1u : 0u);
    }
  }
  // Literally, once: slow_op's runnable times are 0 (row 0), 2 us (row 1) and
  // 700 us (row 9); blocked 5 us (row 2), 0 and 2.5 s.
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  std::string series = R"({symbol="slow_op",binary="/usr/bin/target-app")";
  std::string runnable = "ebpf_function_runnable_ms_bucket" + series;
  EXPECT_EQ(sample_value(text, runnable + R"(,le="0.002"})"), 1u);
  EXPECT_EQ(sample_value(text, runnable + R"(,le="0.004"})"), 2u);
  EXPECT_EQ(sample_value(text, runnable + R"(,le="0.512"})"), 2u);
  EXPECT_EQ(sample_value(text, runnable + R"(,le="1.024"})"), 3u);
  EXPECT_EQ(sample_value(text, "ebpf_function_runnable_ms_count" + series + "}"), 3u);
  auto sum = lines_starting_with(text, "ebpf_function_blocked_ms_sum" + series + "} ");
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(sum[0], "ebpf_function_blocked_ms_sum" + series + "} 2500.005");
  EXPECT_EQ(sample_value(text, R"(ebpf_function_oncpu_ms_count{symbol="fast_op",)"
                               R"(binary="/usr/bin/target-app",pid="17"})"),
            1u);
  // After the latency, before the counters.
  auto type = lines_starting_with(text, "# TYPE ");
  EXPECT_EQ(type, (std::vector<std::string>{"# TYPE ebpf_function_latency_ms histogram",
                                            "# TYPE ebpf_function_oncpu_ms histogram",
                                            "# TYPE ebpf_function_runnable_ms histogram",
                                            "# TYPE ebpf_function_blocked_ms histogram",
                                            "# TYPE ebpf_function_lost_calls_total counter",
                                            "# TYPE ebpf_ringbuf_dropped_calls_total counter"}));
}

TEST(Exposition, CpuSplitOnlyWhereAFunctionHasIt) {
  Report report;
  report.functions.push_back(function_with("plain", {1000}));
  std::string before = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  for (const char* part : {"oncpu", "runnable", "blocked"})
    EXPECT_EQ(before.find(part), std::string::npos) << before;
  report.functions.push_back(function_with_split("split", {{1000, 0, 0}}));
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_EQ(lines_starting_with(text, "ebpf_function_oncpu_ms_count{").size(), 1u);
  EXPECT_TRUE(lines_starting_with(text, R"(ebpf_function_oncpu_ms_count{symbol="plain")").empty());
}

TEST(Exposition, CpuSplitOfFunctionsWithTheSameLabelsIsMerged) {
  Report report;
  report.functions.push_back(function_with_split("helper", {{1000, 0, 0}, {2000, 0, 3000}}));
  report.functions.push_back(function_with_split("helper", {{5000, 4000, 0}}));
  auto snapshot = snapshot_of(report);
  ASSERT_EQ(snapshot.functions.size(), 1u);
  ASSERT_TRUE(snapshot.functions[0].split);
  const SplitTotals& split = *snapshot.functions[0].split;
  EXPECT_EQ(split.oncpu.count, 3u);
  EXPECT_EQ(split.oncpu.sum_ns, 8000u);
  EXPECT_EQ(split.runnable.sum_ns, 4000u);
  EXPECT_EQ(split.runnable.log2_counts[0], 2u);  // 0, 0
  EXPECT_EQ(split.runnable.log2_counts[2], 1u);  // 4 us
  EXPECT_EQ(split.blocked.sum_ns, 3000u);
}

TEST(Exposition, PrefixNamesTheCpuSplitFamilies) {
  Report report;
  report.functions.push_back(function_with_split("f", {{1000, 0, 0}}));
  std::string text = render_exposition(report, ExpositionFormat::kOpenMetrics, "shop_api");
  for (auto& line : lines_of(text)) {
    if (line == "# EOF") continue;
    std::string name = line.starts_with("# ") ? line.substr(7) : line;
    EXPECT_TRUE(name.starts_with("shop_api_")) << line;
  }
  EXPECT_EQ(lines_starting_with(text, "shop_api_function_blocked_ms_count{").size(), 1u);
  std::string bare = render_exposition(report, ExpositionFormat::kPrometheusText, "");
  EXPECT_EQ(lines_starting_with(bare, "function_runnable_ms_count{").size(), 1u);
}

// The label names of a sample line, in order (values may hold escaped quotes).
std::vector<std::string> label_names(const std::string& line) {
  std::vector<std::string> names;
  size_t at = line.find('{');
  if (at == std::string::npos) return names;
  while (line[at] != '}') {
    size_t equals = line.find('=', at);
    names.push_back(line.substr(at + 1, equals - at - 1));
    at = equals + 2;  // past ="
    while (line[at] != '"') at += line[at] == '\\' ? 2 : 1;
    at++;  // past the closing quote: ',' or '}'
  }
  return names;
}

// The containerd name of a Kubernetes container's cgroup.
constexpr const char* kPodCgroup =
    "/kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod1b2f3c4d_5e6f_4a7b_8c9d_0e1f2a3b4c5d.slice/"
    "cri-containerd-3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd.scope";
constexpr const char* kContainerId =
    "3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd";
constexpr const char* kPodUid = "1b2f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";

TEST(ExpositionSeries, LabelsOnEveryFamilyOfTheFunction) {
  Report report;
  report.functions.push_back(function_with_split("slow_op", {{1000, 0, 5000}}));
  report.functions.back().series = {.pid = 1234, .comm = "target-app"};
  report.functions.back().total_lost = {.unreturned = 3};
  report.functions.push_back(function_with_split("slow_op", {{1000, 0, 0}, {2000, 0, 0}}));
  report.functions.back().series = {.pid = 99, .comm = "we\"ird\\\n\xFF"};
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  std::string first =
      R"(symbol="slow_op",binary="/usr/bin/target-app",pid="1234",comm="target-app")";
  std::string second = R"(symbol="slow_op",binary="/usr/bin/target-app",pid="99",comm="we\"ird\\\n)"
                       "\xEF\xBF\xBD\"";
  for (const char* family : {"latency", "oncpu", "runnable", "blocked"}) {
    std::string name = std::string("ebpf_function_") + family + "_ms";
    EXPECT_EQ(sample_value(text, name + "_count{" + first + "}"), 1u) << family;
    EXPECT_EQ(sample_value(text, name + "_count{" + second + "}"), 2u) << family;
    EXPECT_EQ(lines_starting_with(text, name + "_bucket{" + first + ",le=").size(), 33u);
  }
  EXPECT_EQ(
      sample_value(text, "ebpf_function_lost_calls_total{" + first + R"(,reason="unreturned"})"),
      3u);
  EXPECT_EQ(
      sample_value(text, "ebpf_function_lost_calls_total{" + second + R"(,reason="unreturned"})"),
      0u);
}

TEST(ExpositionSeries, EverySeriesOfAScrapeHasTheSameLabelNames) {
  // --by cgroup: a container's cgroup, one no runtime named, and the calls
  // over --max-series.
  Report report;
  report.functions.push_back(function_with_split("slow_op", {{1000, 0, 0}}));
  report.functions.back().series = {
      .cgroup = kPodCgroup, .container_id = kContainerId, .pod_uid = kPodUid};
  report.functions.push_back(function_with_split("slow_op", {{1000, 0, 0}}));
  report.functions.back().series = {.cgroup = "/system.slice/cron.service"};
  report.functions.push_back(function_with_split("slow_op", {{1000, 0, 0}}));
  report.functions.back().series.other = true;
  report.functions.push_back(function_with("fast_op", {1000}));  // no --cpu-split
  report.functions.back().series = {.cgroup = "/user.slice"};
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    std::string text = render_exposition(report, format, "ebpf");
    const std::vector<std::string> expected = {"symbol",       "binary",  "cgroup",
                                               "container_id", "pod_uid", "series"};
    size_t samples = 0;
    for (const std::string& line : lines_starting_with(text, "ebpf_function_")) {
      auto names = label_names(line);
      if (!names.empty() && (names.back() == "le" || names.back() == "reason")) names.pop_back();
      EXPECT_EQ(names, expected) << line;
      samples++;
    }
    EXPECT_EQ(samples, 4 * 35u + 3 * 3 * 35u + 4 * 3u);
  }
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  std::string function =
      R"(ebpf_function_latency_ms_count{symbol="slow_op",binary="/usr/bin/target-app",)";
  EXPECT_EQ(sample_value(text, function + "cgroup=\"" + kPodCgroup + "\",container_id=\"" +
                                   kContainerId + "\",pod_uid=\"" + kPodUid + "\",series=\"\"}"),
            1u);
  EXPECT_EQ(sample_value(text, function + R"(cgroup="/system.slice/cron.service",container_id="",)"
                                          R"(pod_uid="",series=""})"),
            1u);
  EXPECT_EQ(
      sample_value(text, function + R"(cgroup="",container_id="",pod_uid="",series="other"})"), 1u);
}

TEST(ExpositionSeries, ByPidTheOtherSeriesHasAnEmptyPid) {
  Report report;
  report.functions.push_back(function_with("f", {1000}));
  report.functions.back().series.pid = 7;
  report.functions.push_back(function_with("f", {1000, 2000}));
  report.functions.back().series.other = true;
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  std::string function =
      R"(ebpf_function_latency_ms_count{symbol="f",binary="/usr/bin/target-app",)";
  EXPECT_EQ(sample_value(text, function + R"(pid="7",series=""})"), 1u);
  EXPECT_EQ(sample_value(text, function + R"(pid="",series="other"})"), 2u);
}

TEST(ExpositionSeries, SeriesOfAFunctionStayApartAndTheirPidWinsOverDashP) {
  Report report;
  for (int pid : {4242, 4243, 4242}) {
    report.functions.push_back(function_with("f", {1000}));
    report.functions.back().pid = 4242;  // -p
    report.functions.back().series.pid = pid;
  }
  auto snapshot = snapshot_of(report);
  ASSERT_EQ(snapshot.functions.size(), 2u);
  EXPECT_EQ(snapshot.functions[0].count, 2u);
  std::string text = render_exposition(snapshot, ExpositionFormat::kPrometheusText, "ebpf");
  std::string function =
      R"(ebpf_function_latency_ms_count{symbol="f",binary="/usr/bin/target-app",)";
  EXPECT_EQ(sample_value(text, function + R"(pid="4242"})"), 2u);
  EXPECT_EQ(sample_value(text, function + R"(pid="4243"})"), 1u);
  // Series that differ in another label only are apart too.
  report.functions[2].series.comm = "other-comm";
  EXPECT_EQ(snapshot_of(report).functions.size(), 3u);
}

TEST(ExpositionSeries, WithoutSeriesAPidLabelIsWhereItWas) {
  // Without --by, pid (from -p) is a label of the functions that have one
  // and no empty label appears.
  Report report;
  report.functions.push_back(function_with("f", {1000}));
  report.functions.back().pid = 17;
  report.functions.push_back(function_with("g", {1000}));
  std::string text = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  EXPECT_EQ(text.find("=\"\""), std::string::npos) << text;
  EXPECT_EQ(
      sample_value(
          text,
          R"(ebpf_function_latency_ms_count{symbol="f",binary="/usr/bin/target-app",pid="17"})"),
      1u);
  EXPECT_EQ(sample_value(
                text, R"(ebpf_function_latency_ms_count{symbol="g",binary="/usr/bin/target-app"})"),
            1u);
}

TEST(NegotiateFormat, PicksOpenMetricsOnlyWhenAsked) {
  // What Prometheus 2.42 sends.
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,application/"
                             "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
                             "q=0.5,*/*;q=0.1"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("*/*"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain;version=0.0.4"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=0,text/plain"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(content_type(ExpositionFormat::kOpenMetrics),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(content_type(ExpositionFormat::kPrometheusText),
            "text/plain; version=0.0.4; charset=utf-8");
}

TEST(ValidateMetricPrefix, AcceptsNameCharactersOnly) {
  EXPECT_EQ(validate_metric_prefix("ebpf").value(), "ebpf");
  EXPECT_EQ(validate_metric_prefix("_my_App2").value(), "_my_App2");
  EXPECT_EQ(validate_metric_prefix("").value(), "");
  for (std::string_view bad : {"2fast", "my-app", "a.b", "a b", "ns:x"}) {
    auto result = validate_metric_prefix(bad);
    ASSERT_FALSE(result) << bad;
    EXPECT_EQ(result.error().exit_code(), 2) << bad;
  }
}

}  // namespace
}  // namespace funclatency
