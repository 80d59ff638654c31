// The console and JSON sinks' text: exact lines for each report shape, and
// the sinks' handling of a closed output.
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <nlohmann/json.hpp>
#include <ranges>

#include "output/console_sink.h"
#include "output/json_convert.h"
#include "output/json_sink.h"
#include "output/sink_fanout.h"

namespace funclatency {
namespace {

Report sample_report() {
  Report report;
  report.run_start = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  report.interval_start = report.run_start;
  report.time = report.run_start + std::chrono::milliseconds(2500);
  FunctionReport f{
      .symbol = "slow_op", .binary = "/opt/app", .pid = 0, .mode = AggregationMode::kEvents};
  f.interval = LatencyHistogram(1000);
  for (int i = 0; i < 40; i++) f.interval.record(300000);  // 300 us: row 8
  for (int i = 0; i < 88; i++) f.interval.record(700000);  // 700 us: row 9
  f.interval_lost.unreturned = 2;
  f.total = f.interval;
  f.total_lost = f.interval_lost;
  report.functions.push_back(f);
  return report;
}

// sample_report's calls split: the 300 us ones are 100 us on a CPU and 200 us
// blocked, the 700 us ones 100 us on a CPU and 600 us waiting for one.
CpuSplit sample_split() {
  CpuSplit split{LatencyHistogram(1000), LatencyHistogram(1000), LatencyHistogram(1000)};
  for (int i = 0; i < 40; i++) {
    split.oncpu.record(100000);
    split.runnable.record(0);
    split.blocked.record(200000);
  }
  for (int i = 0; i < 88; i++) {
    split.oncpu.record(100000);
    split.runnable.record(600000);
    split.blocked.record(0);
  }
  return split;
}

// --slowest / --slower-than: a call of 12.3 ms by thread 1240 of process
// 1234, returned 1.25 s into sample_report's run, with a stack of a named
// frame, a frame in a binary without a symbol, and an address alone.
SlowCall sample_slow_call() {
  SlowCall call;
  call.duration_ns = 12'300'000;
  call.pid = 1234;
  call.tid = 1240;
  call.thread = "worker-3";
  call.time = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)) +
              std::chrono::microseconds(1'250'042);
  call.stack = {
      {.address = 0x55d0c0a0121a, .symbol = "slow_op", .offset = 0x1a, .binary = "/opt/app"},
      {.address = 0x7f12abcd0042, .binary = "/usr/lib/libc.so.6"},
      {.address = 0x7ffd00001000}};
  return call;
}

// A shorter call of the same thread with a --cpu-split and no stack.
SlowCall sample_split_call() {
  SlowCall split = sample_slow_call();
  split.duration_ns = 700'000;
  split.runnable_ns = 100'000;
  split.blocked_ns = 450'000;
  split.stack.clear();
  return split;
}

// How the console prints `time`: local time of day to the microsecond.
std::string local_time_of(std::chrono::system_clock::time_point time, int micros) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::snprintf(text, sizeof text, "%02d:%02d:%02d.%06d", local.tm_hour, local.tm_min, local.tm_sec,
                micros);
  return text;
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

TEST(ConsoleFormat, CpuSplitLinesFollowTheSummary) {
  Report report = sample_report();
  report.functions[0].interval_split = sample_split();
  std::string text = format_report(report, ConsoleOptions{});
  // Shares of the wall sum (73.6 ms): 12.8 ms on a CPU, 52.8 ms runnable,
  // 8 ms blocked. Percentiles are fine-bucket middles: 0 reads 500ns.
  std::string expected =
      "lost 2\n"
      "on-CPU    avg  100.0us  p50  100.0us  p95  100.0us  p99  100.0us  share  17%\n"
      "runnable  avg  412.5us  p50  592.0us  p95  592.0us  p99  592.0us  share  72%\n"
      "blocked   avg   62.5us  p50    500ns  p95  200.0us  p99  200.0us  share  11%\n"
      "\n";
  EXPECT_TRUE(text.ends_with(expected)) << text;
  for (const auto& line : std::views::split(text, '\n')) EXPECT_LE(line.size(), 100u) << text;
}

TEST(ConsoleFormat, CpuSplitOfTheReportedKindOnly) {
  Report report = sample_report();
  std::string before = format_report(report, ConsoleOptions{});
  EXPECT_EQ(before.find("on-CPU"), std::string::npos) << before;
  // Only the totals have a split: the interval report stays as it was.
  report.functions[0].total_split = sample_split();
  EXPECT_EQ(format_report(report, ConsoleOptions{}), before);
  report.kind = Report::Kind::kTotal;
  std::string total = format_report(report, ConsoleOptions{});
  EXPECT_NE(total.find("lost 2\non-CPU "), std::string::npos) << total;
  EXPECT_NE(total.find("\nrunnable "), std::string::npos) << total;
  EXPECT_NE(total.find("\nblocked "), std::string::npos) << total;
}

TEST(ConsoleFormat, CpuSplitShares) {
  LatencyHistogram wall(1000);
  wall.record(1'000'000'000);
  CpuSplit split{LatencyHistogram(1000), LatencyHistogram(1000), LatencyHistogram(1000)};
  split.oncpu.record(999'999'000);
  split.runnable.record(1000);  // 0.0001%: some, not none
  split.blocked.record(0);
  std::string text = format_cpu_split(split, wall);
  EXPECT_NE(text.find("on-CPU    avg 1000.00ms"), std::string::npos) << text;
  EXPECT_NE(text.find("share 100%\nrunnable"), std::string::npos) << text;
  EXPECT_NE(text.find("share  <1%\nblocked"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("share   0%\n")) << text;
  // No calls, no lines.
  EXPECT_EQ(format_cpu_split(CpuSplit{}, LatencyHistogram(1000)), "");
  // Calls whose split the tracer could not tell are named, not hidden.
  EXPECT_TRUE(format_cpu_split(split, wall, 2)
                  .ends_with("split unknown for 2 calls (a context switch the tracer missed)\n"));
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

// A cgroup path as containerd names a Kubernetes container, and what the
// collector reads from it.
constexpr const char* kContainerId =
    "3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd";
constexpr const char* kPodUid = "1b2f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
constexpr const char* kPodCgroup =
    "/kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod1b2f3c4d_5e6f_4a7b_8c9d_0e1f2a3b4c5d.slice/"
    "cri-containerd-3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd.scope";

SeriesLabels pod_series() {
  return {.cgroup = kPodCgroup, .container_id = kContainerId, .pod_uid = kPodUid};
}

TEST(ConsoleFormat, WithoutSeriesTheOutputIsAsBefore) {
  Report report = sample_report();
  report.series_folded = 3;  // only an `other` series shows it
  EXPECT_EQ(format_report(report, ConsoleOptions{}),
            "slow_op: 128 calls\n"
            "       usec    count  distribution\n"
            "256 -> 511        40  |******************\n"
            "512 -> 1023       88  |****************************************\n"
            "count 128  avg 575.0us  min 300.0us  max 700.0us  p50 688.0us  p95 688.0us  "
            "p99 688.0us  lost 2\n"
            "\n");
}

TEST(ConsoleFormat, SeriesHeaderNamesTheProcess) {
  Report report = sample_report();
  report.functions[0].series = {.pid = 1234, .comm = "target-app"};
  report.functions.push_back(report.functions[0]);
  report.functions[1].series = {.comm = "worker"};
  std::string text = format_report(report, ConsoleOptions{});
  EXPECT_TRUE(
      text.starts_with("slow_op  pid 1234 (target-app): 128 calls\n"
                       "       usec    count  distribution\n"))
      << text;
  EXPECT_NE(text.find("\n\nslow_op  comm worker: 128 calls\n"), std::string::npos) << text;
  // The rest of each section is the function's, as without --by.
  Report plain = sample_report();
  std::string section = format_report(plain, ConsoleOptions{});
  section.erase(0, section.find('\n'));
  EXPECT_NE(text.find(section), std::string::npos) << text;
}

TEST(ConsoleFormat, SeriesHeaderNamesTheContainerAndPod) {
  EXPECT_EQ(format_series(pod_series(), 0),
            std::string("cgroup ") + kPodCgroup + " (container 3f2a1b2c3d4e, pod " + kPodUid + ")");
  EXPECT_EQ(format_series({.cgroup = "/system.slice/cron.service"}, 0),
            "cgroup /system.slice/cron.service");
  EXPECT_EQ(format_series({.cgroup = "/docker/abc", .container_id = "abc"}, 0),
            "cgroup /docker/abc (container abc)");
  SeriesLabels both = pod_series();
  both.pid = 77;
  both.comm = "nginx";
  EXPECT_EQ(format_series(both, 0), std::string("pid 77 (nginx)  cgroup ") + kPodCgroup +
                                        " (container 3f2a1b2c3d4e, pod " + kPodUid + ")");
}

TEST(ConsoleFormat, OtherSeriesSaysHowManyWereFolded) {
  Report report = sample_report();
  report.series_folded = 20;
  report.functions[0].series.other = true;
  std::string text = format_report(report, ConsoleOptions{});
  EXPECT_TRUE(text.starts_with("slow_op  other (20 series folded over --max-series): 128 calls\n"))
      << text;
}

TEST(ConsoleFormat, ControlBytesInNamesDoNotReachTheTerminal) {
  EXPECT_EQ(format_series({.pid = 9, .comm = "evil\x1b[2J\nx"}, 0), "pid 9 (evil\\x1b[2J\\x0ax)");
  EXPECT_EQ(format_series({.comm = "caf\xC3\xA9"}, 0), "comm caf\xC3\xA9");
}

TEST(ConsoleFormat, SlowestBlockFollowsTheSummaryWithStacks) {
  Report report = sample_report();
  SlowCall slow = sample_slow_call();
  SlowCall split = sample_split_call();
  split.thread.clear();
  report.functions[0].interval_slowest = {slow, split};
  const std::string at = local_time_of(slow.time, 250042);
  EXPECT_TRUE(format_report(report, ConsoleOptions{})
                  .ends_with("lost 2\n"
                             "slowest:\n"
                             "  12.30ms  pid 1234  tid 1240 (worker-3)  at " +
                             at +
                             "\n"
                             "    slow_op+0x1a (/opt/app)\n"
                             "    0x7f12abcd0042 (/usr/lib/libc.so.6)\n"
                             "    0x7ffd00001000\n"
                             "  700.0us  pid 1234  tid 1240  at " +
                             at +
                             "  on-CPU 150.0us  runnable 100.0us  blocked 450.0us\n"
                             "\n"))
      << format_report(report, ConsoleOptions{});
}

TEST(ConsoleFormat, SlowestOfTheReportedKind) {
  Report report = sample_report();
  SlowCall interval_call = sample_slow_call();
  SlowCall total_call = interval_call;
  total_call.duration_ns = 3'000'000'000;
  report.functions[0].interval_slowest = {interval_call};
  report.functions[0].total_slowest = {total_call, interval_call};
  std::string text = format_report(report, ConsoleOptions{});
  EXPECT_NE(text.find("  12.30ms  pid"), std::string::npos) << text;
  EXPECT_EQ(text.find("3.00s"), std::string::npos) << text;
  report.kind = Report::Kind::kTotal;
  text = format_report(report, ConsoleOptions{});
  EXPECT_LT(text.find("  3.00s  pid"), text.find("  12.30ms  pid")) << text;
  // Without slow calls there is no block.
  report.functions[0].total_slowest.clear();
  EXPECT_EQ(format_report(report, ConsoleOptions{}).find("slowest:"), std::string::npos);
  EXPECT_EQ(format_slowest({}), "");
}

TEST(ConsoleFormat, SlowestStacksAreCapped) {
  SlowCall call = sample_slow_call();
  call.stack.resize(kMaxConsoleFrames + 4, StackFrame{.address = 0x1000});
  std::string text = format_slowest({call});
  EXPECT_EQ(std::ranges::count(text, '\n'), 1 + 1 + static_cast<long>(kMaxConsoleFrames) + 1)
      << text;
  EXPECT_TRUE(text.ends_with("    0x1000\n    ... 4 more frames\n")) << text;
  call.stack.resize(kMaxConsoleFrames + 1);
  EXPECT_TRUE(format_slowest({call}).ends_with("    0x1000\n    ... 1 more frame\n"));
}

TEST(ConsoleFormat, StackFramesAndThreadNamesAreTerminalSafe) {
  EXPECT_EQ(format_stack_frame({.address = 0x10, .symbol = "f\x1b[2J", .offset = 0}),
            "f\\x1b[2J+0x0");
  SlowCall call = sample_slow_call();
  call.thread = "evil\n";
  EXPECT_NE(format_slow_call_line(call).find("(evil\\x0a)"), std::string::npos);
}

TEST(ConsoleFormat, SlowCallLineLikeFuncslower) {
  SlowCallReport slow{.symbol = "slow_op",
                      .binary = "/opt/app",
                      .threshold_ns = 10'000'000,
                      .call = sample_slow_call()};
  const std::string line =
      local_time_of(slow.call.time, 250042) + "  slow_op  12.30ms  pid 1234  tid 1240 (worker-3)\n";
  EXPECT_EQ(format_slow_call(slow, false), line);
  EXPECT_EQ(format_slow_call(slow, true), line +
                                              "    slow_op+0x1a (/opt/app)\n"
                                              "    0x7f12abcd0042 (/usr/lib/libc.so.6)\n"
                                              "    0x7ffd00001000\n");
  slow.call.runnable_ns = 2'000'000;
  EXPECT_TRUE(format_slow_call(slow, false)
                  .ends_with("(worker-3)  on-CPU 10.30ms  runnable 2.00ms  blocked 0ns\n"));
}

TEST(ConsoleSink, PrintsSlowCallsWithStacksOnlyWhenAsked) {
  SlowCallReport slow{.symbol = "slow_op",
                      .binary = "/opt/app",
                      .threshold_ns = 10'000'000,
                      .call = sample_slow_call()};
  for (bool stacks : {false, true}) {
    char* buffer = nullptr;
    size_t size = 0;
    std::FILE* memory = open_memstream(&buffer, &size);
    ConsoleSink sink(memory, ConsoleOptions{.slow_call_stacks = stacks});
    sink.write_slow_call(slow);
    sink.write_slow_call(slow);
    std::fclose(memory);
    std::string text(buffer, size);
    free(buffer);
    EXPECT_EQ(text, format_slow_call(slow, stacks) + format_slow_call(slow, stacks));
    EXPECT_EQ(text.find("slow_op+0x1a") != std::string::npos, stacks) << text;
  }
}

TEST(JsonFormat, ModeIsNamedBySink) {
  Report report = sample_report();
  FunctionReport& function = report.functions[0];
  function.mode = AggregationMode::kKernel;
  EXPECT_EQ(function_to_json(report, function)["mode"], "kernel");
  function.mode = AggregationMode::kMixed;
  EXPECT_EQ(function_to_json(report, function)["mode"], "mixed");
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

TEST(JsonFormat, CpuSplitPartsHaveTheWallHistogramsFields) {
  Report report = sample_report();
  auto plain = function_to_json(report, report.functions[0]);
  for (const char* part : {"oncpu", "runnable", "blocked"}) EXPECT_FALSE(plain.contains(part));

  report.functions[0].interval_split = sample_split();
  auto json = function_to_json(report, report.functions[0]);
  // The record is as before, plus the three parts and how many calls' split
  // is unknown.
  auto without_parts = json;
  for (const char* part : {"oncpu", "runnable", "blocked", "split_unknown"}) {
    without_parts.erase(part);
  }
  EXPECT_EQ(without_parts, plain);
  EXPECT_EQ(json["split_unknown"], 0);
  const char* histogram_fields[] = {"count",  "sum_ns", "min_ns", "max_ns",
                                    "p50_ns", "p95_ns", "p99_ns", "log2_buckets"};
  for (const char* part : {"oncpu", "runnable", "blocked"}) {
    ASSERT_TRUE(json.contains(part)) << part;
    ASSERT_EQ(json[part].size(), std::size(histogram_fields)) << json[part];
    for (const char* field : histogram_fields) EXPECT_TRUE(json[part].contains(field)) << field;
    EXPECT_EQ(json[part]["count"], 128) << part;
  }
  EXPECT_EQ(json["oncpu"]["sum_ns"], 128 * 100000);
  EXPECT_EQ(json["oncpu"]["log2_buckets"], nlohmann::json::parse("[[64000, 127999, 128]]"));
  EXPECT_EQ(json["runnable"]["sum_ns"], 88 * 600000);
  EXPECT_EQ(json["runnable"]["min_ns"], 0);
  EXPECT_EQ(json["runnable"]["max_ns"], 600000);
  EXPECT_EQ(json["runnable"]["log2_buckets"],
            nlohmann::json::parse("[[0, 1999, 40], [512000, 1023999, 88]]"));
  EXPECT_EQ(json["blocked"]["sum_ns"], 40 * 200000);
  EXPECT_EQ(json["blocked"]["p50_ns"], 500);  // the middle of the fine bucket [0, 1 us)
  EXPECT_EQ(json["blocked"]["p95_ns"], 200000);
  EXPECT_EQ(json["blocked"]["log2_buckets"],
            nlohmann::json::parse("[[0, 1999, 88], [128000, 255999, 40]]"));

  // A total record carries the totals' split.
  report.kind = Report::Kind::kTotal;
  EXPECT_FALSE(function_to_json(report, report.functions[0]).contains("oncpu"));
  report.functions[0].total_split = sample_split();
  EXPECT_EQ(function_to_json(report, report.functions[0])["blocked"]["count"], 128);
}

TEST(JsonFormat, WithoutSeriesTheFieldsAreAsBefore) {
  Report report = sample_report();
  report.series_folded = 0;
  auto json = function_to_json(report, report.functions[0]);
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"binary", "count", "log2_buckets", "lost", "lost_depth",
                                            "lost_ringbuf", "lost_unreturned", "max_ns", "min_ns",
                                            "mode", "p50_ns", "p95_ns", "p99_ns", "sum_ns",
                                            "symbol", "time", "type"}));
  report.functions[0].pid = 4242;  // -p
  EXPECT_EQ(function_to_json(report, report.functions[0])["pid"], 4242);
}

TEST(JsonFormat, SeriesFieldsWhereSet) {
  Report report = sample_report();
  FunctionReport& function = report.functions[0];
  function.pid = 4242;  // -p: the series' pid is the same process, and wins
  function.series = pod_series();
  function.series.pid = 4242;
  function.series.comm = "target-app";
  auto json = function_to_json(report, function);
  EXPECT_EQ(json["pid"], 4242);
  EXPECT_EQ(json["comm"], "target-app");
  EXPECT_EQ(json["cgroup"], kPodCgroup);
  EXPECT_EQ(json["container_id"], kContainerId);  // whole, not shortened as on the console
  EXPECT_EQ(json["pod_uid"], kPodUid);
  EXPECT_FALSE(json.contains("series"));
  EXPECT_FALSE(json.contains("series_folded"));
  EXPECT_FALSE(json.contains("series_ended"));
  // A series' last record says it ended.
  function.series_ended = true;
  EXPECT_EQ(function_to_json(report, function)["series_ended"], true);
  function.series_ended = false;

  function.pid = 0;
  function.series = {.comm = "worker"};
  json = function_to_json(report, function);
  EXPECT_EQ(json["comm"], "worker");
  for (const char* key : {"pid", "cgroup", "container_id", "pod_uid"})
    EXPECT_FALSE(json.contains(key)) << key;
}

TEST(JsonFormat, OtherSeriesAndTheFoldedCount) {
  Report report = sample_report();
  report.series_folded = 20;
  report.functions.push_back(report.functions[0]);
  report.functions[0].series = {.pid = 1};
  report.functions[1].series.other = true;
  auto first = function_to_json(report, report.functions[0]);
  auto other = function_to_json(report, report.functions[1]);
  EXPECT_FALSE(first.contains("series"));
  EXPECT_EQ(first["series_folded"], 20);
  EXPECT_EQ(other["series"], "other");
  EXPECT_EQ(other["series_folded"], 20);
  EXPECT_FALSE(other.contains("pid"));
}

// What a sink saw: the report's address and names.
struct RecordingSink : Sink {
  const Report* last = nullptr;
  std::vector<std::string> symbols, binaries, comms, threads;
  void write(const Report& report) override {
    last = &report;
    for (const auto& function : report.functions) {
      symbols.push_back(function.symbol);
      binaries.push_back(function.binary);
      comms.push_back(function.series.comm.value_or(""));
      for (const auto& call : function.total_slowest) threads.push_back(call.thread);
    }
  }
  void write_slow_call(const SlowCallReport& slow) override {
    symbols.push_back(slow.symbol);
    threads.push_back(slow.call.thread);
  }
};

std::string json_lines_through_fanout(const Report& report, RecordingSink& recording) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* memory = open_memstream(&buffer, &size);
  JsonSink json(memory);
  SinkFanout fanout;
  fanout.add(&json);
  fanout.add(&recording);
  fanout.write(report);
  std::fclose(memory);
  std::string text(buffer, size);
  free(buffer);
  return text;
}

TEST(SinkFanout, NamesThatAreNotUtf8AreMadeValidOnceForEverySink) {
  Report report = sample_report();
  report.functions[0].symbol = "odd_op\xFF";
  report.functions[0].binary = "/tmp/odd\xFF/app";
  // A comm cut at 15 bytes in the middle of a character.
  report.functions[0].series = {.pid = 5,
                                .comm = "\xE5\xB7\xA5\xE4\xBD\x9C\xE8\x80\x85xx\xE8\x80\x85\xE8"};
  report.functions[0].total_slowest.push_back(
      {.duration_ns = 1, .thread = "t\xC0", .stack = {{.symbol = "f\xFE", .binary = "/b\xFF"}}});
  RecordingSink recording;
  std::string text = json_lines_through_fanout(report, recording);
  auto parsed = nlohmann::json::parse(text);  // one record, valid JSON
  EXPECT_EQ(parsed["symbol"], "odd_op\xEF\xBF\xBD");
  EXPECT_EQ(parsed["binary"], "/tmp/odd\xEF\xBF\xBD/app");
  EXPECT_EQ(parsed["comm"], "\xE5\xB7\xA5\xE4\xBD\x9C\xE8\x80\x85xx\xE8\x80\x85\xEF\xBF\xBD");
  // Every sink saw the same mended names, in a copy: the report is const.
  EXPECT_NE(recording.last, &report);
  EXPECT_EQ(recording.symbols, std::vector<std::string>{"odd_op\xEF\xBF\xBD"});
  EXPECT_EQ(recording.binaries, std::vector<std::string>{"/tmp/odd\xEF\xBF\xBD/app"});
  EXPECT_EQ(recording.comms[0], parsed["comm"]);
  EXPECT_EQ(recording.threads, std::vector<std::string>{"t\xEF\xBF\xBD"});
  EXPECT_EQ(report.functions[0].symbol, "odd_op\xFF");
}

TEST(SinkFanout, ValidNamesPassUncopiedAndSlowCallsAreMendedToo) {
  Report report = sample_report();
  RecordingSink recording;
  SinkFanout fanout;
  fanout.add(&recording);
  fanout.write(report);
  EXPECT_EQ(recording.last, &report);
  fanout.write_slow_call({.symbol = "s\xFF", .binary = "/b", .call = {.thread = "\xFFx"}});
  EXPECT_EQ(recording.symbols.back(), "s\xEF\xBF\xBD");
  EXPECT_EQ(recording.threads.back(), "\xEF\xBF\xBDx");
}

TEST(JsonSink, ANameThatIsNotUtf8NeverAbortsARecord) {
  Report report = sample_report();
  report.functions[0].binary = "/tmp/\xFF/app";
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* memory = open_memstream(&buffer, &size);
  JsonSink sink(memory);
  sink.write(report);  // no fan-out in front: still a record, not type_error.316
  std::fclose(memory);
  std::string text(buffer, size);
  free(buffer);
  EXPECT_EQ(nlohmann::json::parse(text)["binary"], "/tmp/\xEF\xBF\xBD/app");
}

TEST(JsonFormat, ExemplarsAreTheRecordsSlowestCalls) {
  Report report = sample_report();
  SlowCall slow = sample_slow_call();
  SlowCall split = sample_split_call();
  report.functions[0].interval_slowest = {slow, split};
  report.functions[0].total_slowest = {split};
  report.functions[0].interval_lost.slow_dropped = 3;
  auto json = function_to_json(report, report.functions[0]);
  auto expected = nlohmann::json::parse(R"([
    {"duration_ns": 12300000, "pid": 1234, "tid": 1240, "thread": "worker-3",
     "time_unix_nano": 1700000001250042000,
     "stack": [{"address": "0x55d0c0a0121a", "symbol": "slow_op", "offset": 26,
                "binary": "/opt/app"},
               {"address": "0x7f12abcd0042", "binary": "/usr/lib/libc.so.6"},
               {"address": "0x7ffd00001000"}]},
    {"duration_ns": 700000, "pid": 1234, "tid": 1240, "thread": "worker-3",
     "time_unix_nano": 1700000001250042000, "runnable_ns": 100000, "blocked_ns": 450000}])");
  EXPECT_EQ(json["exemplars"], expected) << json.dump();
  EXPECT_EQ(json["slow_dropped"], 3);
  // The lost counts stay those of calls that were not timed.
  EXPECT_EQ(json["lost"], 2);

  report.kind = Report::Kind::kTotal;
  json = function_to_json(report, report.functions[0]);
  ASSERT_EQ(json["exemplars"].size(), 1u);
  EXPECT_EQ(json["exemplars"][0]["duration_ns"], 700000);
  EXPECT_EQ(json["slow_dropped"], 0);
}

TEST(JsonFormat, NoExemplarFieldsWithoutSlowCalls) {
  Report report = sample_report();
  auto json = function_to_json(report, report.functions[0]);
  EXPECT_FALSE(json.contains("exemplars"));
  EXPECT_FALSE(json.contains("slow_dropped"));
  report.functions[0].interval_lost.slow_dropped = 1;  // all of them dropped
  EXPECT_EQ(function_to_json(report, report.functions[0])["slow_dropped"], 1);
}

TEST(JsonFormat, SlowCallLineHasTheExemplarFieldsAndItsFunction) {
  SlowCall call = sample_slow_call();
  call.thread = "w\xE8";  // a comm cut mid-character
  call.stack.resize(1);
  SlowCallReport slow{
      .symbol = "slow_op", .binary = "/opt/app", .threshold_ns = 10'000'000, .call = call};
  auto expected = nlohmann::json::parse(R"(
    {"type": "slow_call", "time": "2023-11-14T22:13:21.250042Z", "symbol": "slow_op",
     "binary": "/opt/app", "threshold_ns": 10000000, "duration_ns": 12300000, "pid": 1234,
     "tid": 1240, "thread": "w\ufffd", "time_unix_nano": 1700000001250042000,
     "stack": [{"address": "0x55d0c0a0121a", "symbol": "slow_op", "offset": 26,
                "binary": "/opt/app"}]})");
  SlowCallReport mended = slow;  // as the fan-out hands it to every sink
  EXPECT_TRUE(make_names_valid(mended));
  EXPECT_EQ(slow_call_report_to_json(mended), expected);

  // Straight to the sink, unmended, the line is the same.
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* memory = open_memstream(&buffer, &size);
  JsonSink sink(memory);
  sink.write_slow_call(slow);
  std::fclose(memory);
  std::string text(buffer, size);
  free(buffer);
  EXPECT_EQ(text, expected.dump() + "\n");
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
