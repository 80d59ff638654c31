// OpenMetrics with exemplars (--slowest): where each slow call goes, its
// label set within the specification's bound, the text format left as it
// was, and a strict OpenMetrics checker (promtool parses only text 0.0.4)
// accepting every exposition shape while rejecting broken ones.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "openmetrics_check.h"
#include "output/prometheus/exposition.h"

namespace funclatency {
namespace {

using namespace std::chrono_literals;
using testing::check_openmetrics;

const auto kEpoch = std::chrono::system_clock::time_point(1'700'000'000s);

FunctionReport total_only_function(std::string symbol, std::initializer_list<uint64_t> durations_ns,
                                   uint64_t unit_ns = 1000) {
  FunctionReport function;
  function.symbol = std::move(symbol);
  function.binary = "/usr/bin/target-app";
  function.total = LatencyHistogram(unit_ns);
  for (uint64_t ns : durations_ns) function.total.record(ns);
  return function;
}

// A slow call of `duration_ns` by thread `tid` of process 123, called from
// handle_request (the innermost frame is the traced function itself).
SlowCall slow_call(uint64_t duration_ns, int tid, std::chrono::system_clock::time_point time,
                   std::string caller = "handle_request") {
  SlowCall call;
  call.duration_ns = duration_ns;
  call.pid = 123;
  call.tid = tid;
  call.thread = "worker";
  call.time = time;
  call.stack = {
      {.address = 0x401020, .symbol = "slow_op", .offset = 0x20, .binary = "/app"},
      {.address = 0x7f0000001000, .binary = "/lib/libx.so"},
      {.address = 0x401188, .symbol = std::move(caller), .offset = 0x2f, .binary = "/app"}};
  return call;
}

using testing::lines_of;

std::vector<std::string> lines_with(const std::string& text, std::string_view part) {
  std::vector<std::string> found;
  for (auto& line : lines_of(text)) {
    if (line.find(part) != std::string::npos) found.push_back(line);
  }
  return found;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string text;
  for (const auto& problem : problems) text += problem + "\n";
  return text;
}

constexpr const char* kSeries = R"({symbol="slow_op",binary="/usr/bin/target-app")";

TEST(ExpositionExemplars, EachOnTheSmallestBucketThatHoldsIt) {
  Report report;
  // usec: 1.5 us and 0 (row 0, le 0.002), 5 us (le 0.008), exactly 8 us (le
  // 0.008 still: le is inclusive, although the histogram, whose rows include
  // their lower edge, counts that call in the next bucket), 12.3 ms and 9 ms
  // (le 16.384), 2 hours (past the last finite edge: +Inf).
  report.functions.push_back(total_only_function(
      "slow_op", {0, 1500, 5000, 8000, 9'000'000, 12'300'000, 7'200'000'000'000}));
  report.functions[0].total_slowest = {slow_call(7'200'000'000'000, 7, kEpoch + 9s),
                                       slow_call(12'300'000, 6, kEpoch + 8s),
                                       slow_call(9'000'000, 5, kEpoch + 7s),
                                       slow_call(8000, 4, kEpoch + 6s),
                                       slow_call(5000, 3, kEpoch + 5s),
                                       slow_call(1500, 2, kEpoch + 4500ms),
                                       slow_call(0, 1, kEpoch + 4s)};
  std::string text = render_exposition(report, ExpositionFormat::kOpenMetrics, "ebpf");
  const std::string bucket = std::string("ebpf_function_latency_ms_bucket") + kSeries;
  EXPECT_EQ(lines_with(text, " # {"),
            (std::vector<std::string>{
                bucket + R"(,le="0.002"} 2 # {pid="123",tid="2",frame="handle_request+0x2f"} )"
                         "0.0015 1700000004.500",
                bucket + R"(,le="0.008"} 3 # {pid="123",tid="4",frame="handle_request+0x2f"} )"
                         "0.008 1700000006.000",
                bucket + R"(,le="16.384"} 6 # {pid="123",tid="6",frame="handle_request+0x2f"} )"
                         "12.3 1700000008.000",
                bucket + R"(,le="+Inf"} 7 # {pid="123",tid="7",frame="handle_request+0x2f"} )"
                         "7200000 1700000009.000"}))
      << text;
  EXPECT_EQ(joined(check_openmetrics(text)), "") << text;
}

TEST(ExpositionExemplars, TextFormatIsAsWithoutThem) {
  Report report;
  report.functions.push_back(total_only_function("slow_op", {5000, 12'300'000}));
  std::string before = render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf");
  report.functions[0].total_slowest = {slow_call(12'300'000, 6, kEpoch)};
  EXPECT_EQ(render_exposition(report, ExpositionFormat::kPrometheusText, "ebpf"), before);
  // Nor on any other family in OpenMetrics: latency buckets only.
  report.functions[0].total_split =
      CpuSplit{total_only_function("", {5000, 12'300'000}).total,
               total_only_function("", {0, 0}).total, total_only_function("", {0, 0}).total};
  std::string open_metrics = render_exposition(report, ExpositionFormat::kOpenMetrics, "ebpf");
  auto with_exemplars = lines_with(open_metrics, " # {");
  ASSERT_EQ(with_exemplars.size(), 1u) << open_metrics;
  EXPECT_TRUE(with_exemplars[0].starts_with("ebpf_function_latency_ms_bucket{"));
  EXPECT_EQ(joined(check_openmetrics(open_metrics)), "") << open_metrics;
}

TEST(ExpositionExemplars, InTheRunsSlowestFromTheTotals) {
  // The exposition is cumulative: the interval's slow calls are not used.
  Report report;
  report.functions.push_back(total_only_function("slow_op", {12'300'000}));
  report.functions[0].interval_slowest = {slow_call(12'300'000, 6, kEpoch)};
  EXPECT_TRUE(lines_with(render_exposition(report, ExpositionFormat::kOpenMetrics, "ebpf"), " # {")
                  .empty());
}

TEST(ExpositionExemplars, FunctionsMergedIntoOneSeriesShareTheirSlowCalls) {
  Report report;
  report.functions.push_back(total_only_function("helper", {3000}));
  report.functions[0].total_slowest = {slow_call(3000, 1, kEpoch)};
  report.functions.push_back(total_only_function("helper", {3500}));
  report.functions[1].total_slowest = {slow_call(3500, 2, kEpoch + 1s)};
  auto snapshot = snapshot_of(report);
  ASSERT_EQ(snapshot.functions.size(), 1u);
  ASSERT_EQ(snapshot.functions[0].slowest.size(), 2u);
  EXPECT_EQ(snapshot.functions[0].slowest[0].tid, 2);  // slowest first
  // One bucket (le 0.004) holds both: the slower one is its exemplar.
  auto lines =
      lines_with(render_exposition(snapshot, ExpositionFormat::kOpenMetrics, "ebpf"), " # {");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(R"(le="0.004"} 2 # {pid="123",tid="2")"), std::string::npos) << lines[0];
}

TEST(ExpositionExemplars, FrameIsTheCallerNotTheFunction) {
  SlowCall call = slow_call(1, 1, kEpoch);
  EXPECT_EQ(exemplar_frame(call.stack, "slow_op"), "handle_request+0x2f");
  // A frame of another name comes first (the uretprobe's address in the caller).
  EXPECT_EQ(exemplar_frame(call.stack, "other"), "slow_op+0x20");
  EXPECT_EQ(exemplar_frame({}, "slow_op"), "");
  EXPECT_EQ(exemplar_frame({{.address = 1}, {.address = 2, .binary = "/x"}}, "slow_op"), "");
}

TEST(ExpositionExemplars, LabelsStayWithin128CodePoints) {
  SlowCallExemplar exemplar{.duration_ns = 12'300'000,
                            .pid = 4194304,
                            .tid = 4194303,
                            .frame = "",
                            .time = kEpoch + 123ms};
  EXPECT_EQ(format_exemplar(exemplar), R"( # {pid="4194304",tid="4194303"} 12.3 1700000000.123)");
  // pid, tid and frame take 3 + 7 + 3 + 7 + 5 = 25: 103 code points are left
  // for the frame, which a long C++ name (2-byte characters too) exceeds.
  std::string name;
  for (int i = 0; i < 60; i++) name += "\xC3\xA9_";  // "é_": 2 code points, 3 bytes
  exemplar.frame = name + "+0x10";
  std::string text = format_exemplar(exemplar);
  size_t start = text.find("frame=\"") + 7;
  std::string frame = text.substr(start, text.find('"', start) - start);
  size_t code_points = 0;
  for (char c : frame) code_points += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  EXPECT_EQ(code_points, 103u) << frame;
  EXPECT_TRUE(frame.ends_with("\xE2\x80\xA6")) << frame;  // …
  EXPECT_TRUE(frame.starts_with("\xC3\xA9_\xC3\xA9_")) << frame;
  // What fits is left whole; quotes are escaped, not counted as the escape.
  exemplar.frame = std::string(100, 'x') + "\"\\";
  text = format_exemplar(exemplar);
  EXPECT_NE(text.find("frame=\"" + std::string(100, 'x') + "\\\"\\\\\"}"), std::string::npos)
      << text;
  // Bytes that are not UTF-8 become U+FFFD.
  exemplar.frame = "f\xFF";
  EXPECT_NE(format_exemplar(exemplar).find("frame=\"f\xEF\xBF\xBD\""), std::string::npos);
}

TEST(ExpositionExemplars, TimesBeforeTheEpochAreZero) {
  SlowCallExemplar exemplar{.duration_ns = 1, .pid = 1, .tid = 1, .frame = "", .time = {}};
  exemplar.time -= 5s;
  EXPECT_TRUE(format_exemplar(exemplar).ends_with(" 0.000001 0.000")) << format_exemplar(exemplar);
}

// Every shape the exposition takes, for the checker: series labels of every
// kind (escapes, invalid UTF-8, empty ones), the CPU split, lost calls,
// exemplars with odd names, units.
Report varied_report(uint64_t unit_ns) {
  Report report;
  report.functions.push_back(total_only_function("slow_op", {0, 999, 5000, 12'300'000}, unit_ns));
  report.functions[0].series = {.pid = 1234, .comm = "we\"ird\\\n\xE5"};
  report.functions[0].total_slowest = {slow_call(12'300'000, 5, kEpoch, "ns::f<\"x\">(char\\)"),
                                       slow_call(5000, 6, kEpoch, std::string(300, 'y')),
                                       slow_call(999, 7, kEpoch, "bad\xFF")};
  report.functions[0].total_lost = {.unreturned = 2, .depth = 1};
  CpuSplit split{total_only_function("", {0, 999, 2000, 300}, unit_ns).total,
                 total_only_function("", {0, 0, 3000, 0}, unit_ns).total,
                 total_only_function("", {0, 0, 0, 12'000'000}, unit_ns).total};
  report.functions[0].total_split = split;
  report.functions.push_back(total_only_function("idle", {}, unit_ns));
  report.functions.push_back(total_only_function("other", {7}, unit_ns));
  report.functions.back().series.other = true;
  report.functions.back().total_slowest = {slow_call(7, 9, kEpoch)};
  report.ringbuf_dropped_total = 3;
  return report;
}

TEST(OpenMetricsCheck, AcceptsEveryExpositionShape) {
  for (uint64_t unit_ns : {uint64_t{1}, uint64_t{1000}, uint64_t{1'000'000}}) {
    for (const char* prefix : {"ebpf", ""}) {
      std::string text =
          render_exposition(varied_report(unit_ns), ExpositionFormat::kOpenMetrics, prefix);
      EXPECT_EQ(joined(check_openmetrics(text)), "") << unit_ns << "\n" << text;
      EXPECT_EQ(lines_with(text, " # {").size(), unit_ns == 1'000'000 ? 3u : 4u) << text;
    }
  }
  EXPECT_EQ(joined(check_openmetrics(
                render_exposition(Report{}, ExpositionFormat::kOpenMetrics, "ebpf"))),
            "");
}

TEST(OpenMetricsCheck, RejectsWhatTheSpecificationForbids) {
  const std::string histogram =
      "# TYPE x_ms histogram\n# UNIT x_ms ms\n"
      "x_ms_bucket{le=\"1\"} 1\nx_ms_bucket{le=\"+Inf\"} 2\nx_ms_sum 3\nx_ms_count 2\n";
  ASSERT_EQ(joined(check_openmetrics(histogram + "# EOF\n")), "");
  ASSERT_EQ(joined(check_openmetrics(
                "# TYPE x_ms histogram\nx_ms_bucket{le=\"1\"} 1 # {a=\"b\"} 0.5 17.5\n"
                "x_ms_bucket{le=\"+Inf\"} 1\nx_ms_count 1\n# EOF\n")),
            "");
  const std::pair<const char*, std::string> broken[] = {
      {"no EOF", histogram},
      {"text after EOF", histogram + "# EOF\nx 1\n"},
      {"counter TYPE with _total", "# TYPE c_total counter\nc_total 1\n# EOF\n"},
      {"counter sample without _total", "# TYPE c counter\nc 1\n# EOF\n"},
      {"UNIT not a suffix", "# TYPE x histogram\n# UNIT x ms\n# EOF\n"},
      {"metadata twice", "# TYPE g gauge\n# TYPE g gauge\n# EOF\n"},
      {"metadata after samples", "# TYPE g gauge\ng 1\n# HELP g late\n# EOF\n"},
      {"interleaved families", "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n# EOF\n"},
      {"series twice", "g{a=\"1\"} 1\ng{a=\"1\"} 2\n# EOF\n"},
      {"bad escape", "g{a=\"\\t\"} 1\n# EOF\n"},
      {"unquoted value", "g{a=1} 1\n# EOF\n"},
      {"no +Inf", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n# EOF\n"},
      {"count differs from +Inf",
       "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 2\n# EOF\n"},
      {"buckets not cumulative",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n# EOF\n"},
      {"le not increasing",
       "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
       "h_count 1\n# EOF\n"},
      {"exemplar on _sum",
       "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1 # {a=\"b\"} 1\nh_count 1\n# EOF\n"},
      {"exemplar above its le",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 1 # {a=\"b\"} 1.5\nh_bucket{le=\"+Inf\"} 1\n"
       "h_count 1\n# EOF\n"},
      {"exemplar in the bucket below",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"2\"} 1 # {a=\"b\"} 1\n"
       "h_bucket{le=\"+Inf\"} 1\nh_count 1\n# EOF\n"},
      {"exemplar labels over 128", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1 # {a=\"" +
                                       std::string(128, 'x') + "\"} 1\nh_count 1\n# EOF\n"},
      {"exemplar without a value",
       "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1 # {a=\"b\"}\nh_count 1\n# EOF\n"},
      {"junk after the value", "g 1 2 3\n# EOF\n"},
      {"not a number", "g one\n# EOF\n"},
      {"empty line", "g 1\n\n# EOF\n"},
      {"negative counter", "# TYPE c counter\nc_total -1\n# EOF\n"},
  };
  for (const auto& [what, text] : broken)
    EXPECT_NE(check_openmetrics(text), std::vector<std::string>{}) << what;
}

}  // namespace
}  // namespace funclatency
