// The agent's configuration file (agent/agent_config.h), offline: what a
// valid file gives, and one clear error, with its line, for each way a file
// can be wrong.
#include "agent/agent_config.h"

#include <gtest/gtest.h>

#include <fstream>

namespace funclatency {
namespace {

constexpr const char* kFull = R"(targets:
  - name: checkout
    program: /app/server
    functions: [handle_request, "db_*"]
    regex: false
    mode: kernel
    labels: {service: cart, tier: web}
    slowest: 5
  - name: nginx
    program: nginx
    functions: ngx_http_process_request
    slower_than: 2.5ms
by: [cgroup, pid]
slowest: 3
interval: 10s
series_expiry: 90s
go_goroutines: 20000
exporters:
  prometheus:
    listen: "0.0.0.0:9464"
    web_config: /etc/funclatency/web/web-config.yml
  otlp:
    endpoint: http://collector:4318
    protocol: grpc
)";

TEST(AgentConfig, ReadsEveryField) {
  auto config = parse_agent_config(kFull, "agent.yaml");
  ASSERT_TRUE(config) << config.error().message();
  ASSERT_EQ(config->targets.size(), 2u);
  const FollowTarget& checkout = config->targets[0];
  EXPECT_EQ(checkout.name, "checkout");
  EXPECT_EQ(checkout.program, "/app/server");
  EXPECT_EQ(checkout.functions, (std::vector<std::string>{"handle_request", "db_*"}));
  EXPECT_FALSE(checkout.regex);
  EXPECT_EQ(checkout.mode, ModeChoice::kKernel);
  EXPECT_EQ(checkout.labels, (std::vector<std::pair<std::string, std::string>>{{"service", "cart"},
                                                                               {"tier", "web"}}));
  // Without a `by` of its own, a target has the file's.
  EXPECT_EQ(checkout.by, (std::vector<std::string>{"cgroup", "pid"}));
  // A single function may be written without a list; a bare program name.
  EXPECT_EQ(config->targets[1].functions, std::vector<std::string>{"ngx_http_process_request"});
  EXPECT_EQ(config->targets[1].program, "nginx");
  EXPECT_FALSE(config->targets[1].mode.has_value());
  // Slow calls of its own, or (unset) the run's.
  EXPECT_EQ(checkout.slowest, 5u);
  EXPECT_FALSE(checkout.slower_than_ns.has_value());
  EXPECT_EQ(config->targets[1].slower_than_ns, 2'500'000u);
  EXPECT_FALSE(config->targets[1].slowest.has_value());
  const AgentSettings& s = config->settings;
  EXPECT_EQ(s.by, (std::vector<std::string>{"cgroup", "pid"}));
  EXPECT_EQ(s.slowest, 3u);
  EXPECT_EQ(s.interval, std::chrono::milliseconds(10000));
  EXPECT_EQ(s.series_expiry, std::chrono::milliseconds(90000));
  EXPECT_EQ(s.go_goroutines, 20000u);
  ASSERT_TRUE(s.prometheus);
  EXPECT_EQ(s.prometheus->listen, "0.0.0.0:9464");
  EXPECT_EQ(s.prometheus->web_config, "/etc/funclatency/web/web-config.yml");
  ASSERT_TRUE(s.otlp);
  EXPECT_EQ(s.otlp->endpoint, "http://collector:4318");
  EXPECT_EQ(s.otlp->protocol, "grpc");
}

// Each wrong file: one kBadInput error whose message says what and where.
TEST(AgentConfig, RefusesWhatItCannotUse) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"targets: [", "not YAML"},
      {"targets: []\n", "at least one target"},
      {"exporters: {}\n", "at least one target"},
      {"targets:\n  - program: /a\n    functions: [f]\n", "needs a name"},
      {"targets:\n  - name: a\n    functions: [f]\n", "needs a program"},
      {"targets:\n  - name: a\n    program: /a\n", "needs functions"},
      {"targets:\n  - name: a\n    program: /a\n    functions: []\n", "names no function"},
      {"targets:\n  - name: a\n    program: app/x\n    functions: [f]\n", "absolute path"},
      {"targets:\n  - name: a\n    program: /a\n    functions: [f]\n    mode: fast\n",
       "mode must be auto, events or kernel"},
      {"targets:\n  - name: a\n    program: /a\n    functions: [f]\n    labels: {9x: y}\n",
       "label name"},
      {"targets:\n  - name: a\n    program: /a\n    functions: [f]\n    labels: {target: y}\n",
       "the target's name"},
      {"targets:\n  - name: a\n    program: /a\n    functions: [f]\n    colour: red\n",
       "unknown field \"colour\""},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\n  - {name: a, program: /b, "
       "functions: [f]}\n",
       "two targets are named a"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\n  - {name: b, program: /a, "
       "functions: [g]}\n",
       "two targets follow /a"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\nby: [host]\n", "by: \"host\""},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\nslowest: many\n", "whole number"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\nslowest: 101\n", "1 to 100"},
      {"targets:\n  - {name: a, program: /a, functions: [f], slowest: 0}\n", "1 to 100"},
      {"targets:\n  - {name: a, program: /a, functions: [f], slower_than: soon}\n",
       "slower_than must be a duration"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\ninterval: soon\n", "duration"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\ngo_goroutines: lots\n",
       "go_goroutines must be a whole number"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\ngo_goroutines: 0\n",
       "go_goroutines must be 1 to 1048576"},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\nexporters: {statsd: {}}\n",
       "unknown field \"statsd\""},
      {"targets:\n  - {name: a, program: /a, functions: [f]}\nexporters: {prometheus: {}}\n",
       "needs listen"},
      {"spans: {job: x}\n", "spans must be a list"},
      {"spans: [\"\"]\n", "an empty span"},
      {"spans:\n  - {name: job, start: /a:f:arg0}\n", "needs name, start and end"},
      {"spans:\n  - {name: job, start: /a:f:arg0, end: g:arg0, colour: red}\n",
       "unknown field \"colour\""},
      {"spans: []\n", "at least one target (or span)"},
  };
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    auto config = parse_agent_config(text, "agent.yaml");
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(config.error().message().find(expected), std::string::npos)
        << config.error().message();
    EXPECT_NE(config.error().message().find("agent.yaml"), std::string::npos);
  }
}

// `spans`: --span's text, or its parts as a mapping, written as that text
// (cli/span_option parses both); a file of spans alone follows them.
TEST(AgentConfig, ReadsSpansAsTextOrMapping) {
  auto config = parse_agent_config(
      "spans:\n"
      "  - \"job=/app/q:submit_job:arg0 -> complete_job:arg0\"\n"
      "  - name: id\n"
      "    start: /app/q:send:arg1\n"
      "    end: recv:arg1\n"
      "    any_process: true\n",
      "agent.yaml");
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_TRUE(config->targets.empty());
  EXPECT_EQ(config->spans,
            (std::vector<std::string>{"job=/app/q:submit_job:arg0 -> complete_job:arg0",
                                      "id=/app/q:send:arg1 -> recv:arg1 any-process"}));
}

TEST(AgentConfig, SaysTheLineOfAMistake) {
  auto config = parse_agent_config(
      "targets:\n  - name: a\n    program: /a\n    functions: [f]\n    mode: fast\n", "x.yaml");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message().find("(line 5)"), std::string::npos)
      << config.error().message();
}

TEST(AgentConfig, AMissingFileIsBadInputWithErrno) {
  auto config = load_agent_config("/nonexistent/agent.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(config.error().errno_value, ENOENT);
}

TEST(AgentConfig, EachTargetMayHaveItsOwnSeries) {
  auto config = parse_agent_config(
      "targets:\n  - {name: a, program: /a, functions: [f], by: [pid, comm]}\n"
      "  - {name: b, program: /b, functions: [f]}\n  - {name: c, program: /c, functions: [f], "
      "by: []}\n",
      "x");
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(series_by_bits(*config->targets[0].by), FL_BY_PID | FL_BY_COMM);
  // No `by` anywhere: by cgroup, a followed program's containers apart.
  EXPECT_EQ(series_by_bits(*config->targets[1].by), FL_BY_CGROUP);
  // An empty list: one histogram for the target.
  EXPECT_EQ(series_by_bits(*config->targets[2].by), 0u);
  EXPECT_FALSE(parse_agent_config(
      "targets:\n  - {name: a, program: /a, functions: [f], by: [host]}\n", "x"));
}

TEST(AgentConfig, SettingsCompareForReloads) {
  auto a = parse_agent_config(kFull, "a");
  auto b = parse_agent_config(kFull, "b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->settings, b->settings);
  EXPECT_EQ(a->targets, b->targets);
  b->settings.slowest = 4;
  EXPECT_NE(a->settings, b->settings);
}

}  // namespace
}  // namespace funclatency
