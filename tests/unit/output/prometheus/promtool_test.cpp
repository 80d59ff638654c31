// `promtool check metrics` (Prometheus' own parser and linter) on what the
// running endpoint serves.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "../agent_test_report.h"
#include "output/prometheus/prometheus_sink.h"

namespace funclatency {
namespace {

// The metric names the issues fix (the dashboards' queries use them) end in
// the abbreviation "ms", which promtool's linter flags. It is the only problem
// allowed; anything else, and any parse error, fails.
bool accepted_lint(const std::string& problem) {
  for (std::string_view family : {"latency", "oncpu", "runnable", "blocked"}) {
    if (problem == "ebpf_function_" + std::string(family) +
                       "_ms metric names should not contain abbreviated units") {
      return true;
    }
  }
  return false;
}

struct PromtoolVerdict {
  int exit_code = -1;
  std::vector<std::string> problems;
};

PromtoolVerdict promtool_check_metrics(const std::string& exposition) {
  auto dir = std::filesystem::temp_directory_path();
  std::string stem = "fl-promtool-" + std::to_string(getpid());
  auto input = dir / (stem + ".prom");
  auto output = dir / (stem + ".out");
  std::ofstream(input) << exposition;
  std::string command =
      "promtool check metrics < " + input.string() + " > " + output.string() + " 2>&1";
  int status = std::system(command.c_str());
  PromtoolVerdict verdict;
  verdict.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream result(output);
  for (std::string line; std::getline(result, line);) {
    if (!line.empty()) verdict.problems.push_back(line);
  }
  std::filesystem::remove(input);
  std::filesystem::remove(output);
  return verdict;
}

bool have_promtool() {
  return std::system("command -v promtool > /dev/null 2>&1") == 0;
}

Report varied_report() {
  Report report;
  auto add = [&](std::string symbol, std::string binary, int pid,
                 std::initializer_list<uint64_t> durations, LostCounts lost) {
    FunctionReport function;
    function.symbol = std::move(symbol);
    function.binary = std::move(binary);
    function.pid = pid;
    for (uint64_t ns : durations) function.total.record(ns);
    function.total_lost = lost;
    report.functions.push_back(function);
  };
  add("slow_op", "/usr/bin/target-app", 0, {1000, 250000, 260000, 3000000000}, {});
  // --cpu-split on one function only: its families must lint as well.
  CpuSplit split;
  for (auto [oncpu, runnable, blocked] : {std::array<uint64_t, 3>{1000, 0, 0},
                                          {50000, 200000, 0},
                                          {10000, 0, 250000},
                                          {1000000, 999000000, 2000000000}}) {
    split.oncpu.record(oncpu);
    split.runnable.record(runnable);
    split.blocked.record(blocked);
  }
  report.functions.back().total_split = split;
  add(R"(operator""_km(char const*))", "/opt/we\"ird\\dir/lib\xFF.so", 17, {5},
      {.unreturned = 4, .depth = 1, .ringbuf = 2});
  add("idle", "/usr/bin/target-app", 0, {}, {});
  report.ringbuf_dropped_total = 2;
  return report;
}

TEST(Promtool, AcceptsTheServedExposition) {
  if (!have_promtool())
    GTEST_FAIL() << "promtool not found: run scripts/setup (package prometheus)";
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", 0}, "ebpf");
  ASSERT_TRUE(sink) << sink.error().message();
  (*sink)->write(varied_report());
  httplib::Client client("127.0.0.1", (*sink)->port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  ASSERT_NE(response->body.find("ebpf_function_latency_ms_bucket{"), std::string::npos);
  for (std::string_view family : {"oncpu", "runnable", "blocked"}) {
    ASSERT_NE(response->body.find("ebpf_function_" + std::string(family) + "_ms_bucket{"),
              std::string::npos)
        << family;
  }

  PromtoolVerdict verdict = promtool_check_metrics(response->body);
  EXPECT_TRUE(verdict.exit_code == 0 || verdict.exit_code == 3) << verdict.exit_code;
  for (const std::string& problem : verdict.problems)
    EXPECT_TRUE(accepted_lint(problem)) << problem;
}

// --by pid,comm,cgroup with --max-series: every label, values that need
// escaping, empty ones where a series has none, the `other` series.
TEST(Promtool, AcceptsSeriesLabels) {
  if (!have_promtool())
    GTEST_FAIL() << "promtool not found: run scripts/setup (package prometheus)";
  Report report = varied_report();
  report.functions.resize(1);  // slow_op, with --cpu-split
  report.functions.push_back(report.functions[0]);
  report.functions.push_back(report.functions[0]);
  report.functions[0].series = {
      .pid = 1234,
      .comm = "target-app",
      .cgroup =
          "/kubepods.slice/kubepods-besteffort.slice/"
          "kubepods-besteffort-pod1b2f3c4d_5e6f_4a7b_8c9d_0e1f2a3b4c5d.slice/"
          "cri-containerd-3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd."
          "scope",
      .container_id = "3f2a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
      .pod_uid = "1b2f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"};
  report.functions[1].series = {
      .pid = 77, .comm = "we\"ird\\\n\xE5", .cgroup = "/user.slice/user-0.slice"};
  report.functions[2].series.other = true;
  report.functions[2].total_lost = {.unreturned = 1};
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", 0}, "ebpf");
  ASSERT_TRUE(sink) << sink.error().message();
  (*sink)->write(report);
  httplib::Client client("127.0.0.1", (*sink)->port());
  auto response = client.Get("/metrics");  // text 0.0.4, what promtool parses
  ASSERT_TRUE(response);
  ASSERT_NE(response->body.find(R"(series="other")"), std::string::npos);
  ASSERT_NE(response->body.find(R"(container_id="3f2a1b2c3d4e)"), std::string::npos);
  PromtoolVerdict verdict = promtool_check_metrics(response->body);
  EXPECT_TRUE(verdict.exit_code == 0 || verdict.exit_code == 3) << verdict.exit_code;
  for (const std::string& problem : verdict.problems)
    EXPECT_TRUE(accepted_lint(problem)) << problem;
}

// --follow/--config: the self-metrics, the target's labels and a runtime.
TEST(Promtool, AcceptsTheAgentsExposition) {
  if (!have_promtool())
    GTEST_FAIL() << "promtool not found: run scripts/setup (package prometheus)";
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", 0}, "ebpf");
  ASSERT_TRUE(sink) << sink.error().message();
  (*sink)->write(testing::agent_report());
  httplib::Client client("127.0.0.1", (*sink)->port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  ASSERT_NE(response->body.find("funclatency_exec_events_total 1234"), std::string::npos);
  ASSERT_NE(response->body.find(R"(container_runtime="podman",target="checkout")"),
            std::string::npos);
  PromtoolVerdict verdict = promtool_check_metrics(response->body);
  EXPECT_TRUE(verdict.exit_code == 0 || verdict.exit_code == 3) << verdict.exit_code;
  for (const std::string& problem : verdict.problems)
    EXPECT_TRUE(accepted_lint(problem)) << problem;
}

TEST(Promtool, RejectsABrokenExposition) {
  // The check above can fail: promtool does reject what it cannot parse.
  if (!have_promtool())
    GTEST_FAIL() << "promtool not found: run scripts/setup (package prometheus)";
  PromtoolVerdict verdict =
      promtool_check_metrics("# TYPE x histogram\nx_bucket{le=\"1\"} 1\nx_count{le=\"oops} 1\n");
  EXPECT_EQ(verdict.exit_code, 1);
}

}  // namespace
}  // namespace funclatency
