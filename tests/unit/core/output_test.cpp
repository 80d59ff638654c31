#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "output/console_sink.h"
#include "output/json_sink.h"

namespace funclatency {
namespace {

Report sample_report() {
  Report report;
  report.run_start = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  report.interval_start = report.run_start;
  report.time = report.run_start + std::chrono::milliseconds(2500);
  FunctionReport f{.symbol = "slow_op", .binary = "/opt/app", .pid = 0, .mode = "events"};
  f.interval = LatencyHistogram(1000);
  for (int i = 0; i < 40; i++) f.interval.record(300000);  // 300 us: row 8
  for (int i = 0; i < 88; i++) f.interval.record(700000);  // 700 us: row 9
  f.interval_lost.unreturned = 2;
  f.total = f.interval;
  f.total_lost = f.interval_lost;
  report.functions.push_back(f);
  return report;
}

TEST(ConsoleFormat, HeaderRowsAndSummary) {
  std::string text = format_report(sample_report(), ConsoleOptions{});
  EXPECT_NE(text.find("slow_op: 128 calls\n"), std::string::npos) << text;
  EXPECT_NE(text.find("usec    count  distribution\n"), std::string::npos) << text;
  EXPECT_NE(text.find("256 -> 511        40  |******************\n"), std::string::npos) << text;
  EXPECT_NE(text.find("512 -> 1023       88  |****************************************\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("count 128  avg 575.0us  min 300.0us  max 700.0us"), std::string::npos)
      << text;
  EXPECT_NE(text.find("lost 2\n"), std::string::npos) << text;
}

TEST(ConsoleFormat, RangesAlignForWideRows) {
  LatencyHistogram h(1);
  h.record(3);
  h.record(100000);
  std::string text = format_histogram(h, "nsec");
  // Every row line has its '|' in the same column.
  size_t column = std::string::npos;
  size_t start = text.find('\n') + 1;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    size_t bar = text.find('|', start);
    if (column == std::string::npos) column = bar - start;
    EXPECT_EQ(bar - start, column) << text;
    start = end + 1;
  }
}

TEST(ConsoleFormat, Durations) {
  EXPECT_EQ(format_duration(999), "999ns");
  EXPECT_EQ(format_duration(1500), "1.5us");
  EXPECT_EQ(format_duration(2500000), "2.50ms");
  EXPECT_EQ(format_duration(3000000000), "3.00s");
}

TEST(JsonFormat, RecordHasEveryFieldWithBoundsInNanoseconds) {
  Report report = sample_report();
  auto json = function_to_json(report, report.functions[0]);
  EXPECT_EQ(json["type"], "interval");
  EXPECT_EQ(json["time"], "2023-11-14T22:13:22.500000Z");
  EXPECT_EQ(json["symbol"], "slow_op");
  EXPECT_EQ(json["binary"], "/opt/app");
  EXPECT_EQ(json["mode"], "events");
  EXPECT_EQ(json["count"], 128);
  EXPECT_EQ(json["sum_ns"], 40 * 300000 + 88 * 700000);
  EXPECT_EQ(json["min_ns"], 300000);
  EXPECT_EQ(json["max_ns"], 700000);
  EXPECT_EQ(json["lost"], 2);
  for (const char* key : {"p50_ns", "p95_ns", "p99_ns"}) EXPECT_TRUE(json.contains(key));
  auto expected = nlohmann::json::parse("[[256000, 511999, 40], [512000, 1023999, 88]]");
  EXPECT_EQ(json["log2_buckets"], expected);
  report.kind = Report::Kind::kTotal;
  EXPECT_EQ(function_to_json(report, report.functions[0])["type"], "total");
}

TEST(JsonSink, WritesOneLinePerFunctionAndNoticesAClosedPipe) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* memory = open_memstream(&buffer, &size);
  JsonSink sink(memory);
  Report report = sample_report();
  report.functions.push_back(report.functions[0]);
  sink.write(report);
  std::fclose(memory);
  std::string text(buffer, size);
  free(buffer);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);

  signal(SIGPIPE, SIG_IGN);  // as funclatency does: a closed reader is a failed write
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  std::FILE* closed = fdopen(fds[1], "w");
  JsonSink broken(closed);
  broken.write(report);
  EXPECT_TRUE(broken.broken());
  std::fclose(closed);
}

}  // namespace
}  // namespace funclatency
