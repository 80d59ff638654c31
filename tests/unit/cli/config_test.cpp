#include "cli/config.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "bpf/funclatency.h"
#include "cli/series.h"

namespace funclatency {
namespace {

Result<Config> parse(std::vector<std::string> args) {
  CLI::App app;
  CommandLine values;
  add_core_options(app, values);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  return finish_config(values);
}

TEST(Config, DefaultsAreUsecAutoAndPrintAtExit) {
  auto config = parse({"./app:slow_op"});
  ASSERT_TRUE(config);
  EXPECT_EQ(config->unit_ns, 1000u);
  EXPECT_EQ(config->unit_name, "usec");
  EXPECT_EQ(config->mode, ModeChoice::kAuto);
  EXPECT_EQ(config->interval.count(), 0);
  EXPECT_FALSE(config->pid);
}

TEST(Config, OptionsMapToConfig) {
  auto config =
      parse({"-p", "42", "-i", "2", "-d", "1.5", "-m", "--mode", "kernel", "--json", ":slow_op"});
  ASSERT_TRUE(config);
  EXPECT_EQ(*config->pid, 42);
  EXPECT_EQ(config->interval.count(), 2000);
  EXPECT_EQ(config->duration->count(), 1500);
  EXPECT_EQ(config->unit_ns, 1000000u);
  EXPECT_EQ(config->mode, ModeChoice::kKernel);
  EXPECT_TRUE(config->json);
}

TEST(Config, BadUsage) {
  EXPECT_THROW(parse({"-m", "-n", "./a:f"}), CLI::ParseError);
  EXPECT_THROW(parse({"--mode", "fast", "./a:f"}), CLI::ParseError);
  EXPECT_THROW(parse({}), CLI::ParseError);
  auto config = parse({"./app"});
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().exit_code(), 2);
}

TEST(Config, ByValue) {
  auto config = parse({"--by", "pid,retval:errno", "./a:f"});
  ASSERT_TRUE(config);
  EXPECT_EQ(config->series_by, FL_BY_PID | FL_BY_VALUE);
  EXPECT_EQ(config->value_series, (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_ERRNO}));
  config = parse({"--by", "arg2", "./a:f"});
  ASSERT_TRUE(config);
  EXPECT_EQ(config->series_by, FL_BY_VALUE);
  EXPECT_EQ(config->value_series, (ValueSeries{FL_VALUE_ARG, 2, FL_RULE_LOG2}));
  EXPECT_THROW(parse({"--by", "retval:maybe", "./a:f"}), CLI::ParseError);
  EXPECT_THROW(parse({"--by", "arg9", "./a:f"}), CLI::ParseError);
  auto two = parse({"--by", "retval,arg1", "./a:f"});
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error().exit_code(), 2);
  EXPECT_NE(two.error().message().find("one value per run"), std::string::npos);
  auto agent = parse({"--by", "retval", "--config", "agent.yaml", "./a:f"});
  ASSERT_FALSE(agent);
  EXPECT_NE(agent.error().message().find("--config"), std::string::npos);
}

TEST(Config, SlowCallOptions) {
  auto config = parse({"--slowest", "3", "--slower-than", "2.5ms", "./a:f"});
  ASSERT_TRUE(config);
  EXPECT_EQ(config->slowest, 3u);
  EXPECT_EQ(config->slower_than_ns, 2'500'000u);
  EXPECT_THROW(parse({"--slowest", "0", "./a:f"}), CLI::ParseError);
  EXPECT_THROW(parse({"--slowest", "101", "./a:f"}), CLI::ParseError);
  auto bad = parse({"--slower-than", "10", "./a:f"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().exit_code(), 2);
}

// --series-expiry, else 3 intervals and at least 30 s; a pid series ends at
// once unless one is given.
TEST(Config, SeriesExpiry) {
  using std::chrono::milliseconds;
  auto config = parse({"--by", "cgroup", "./a:f"});
  ASSERT_TRUE(config);
  EXPECT_EQ(series_expiry(*config), milliseconds(30'000));
  EXPECT_EQ(series_options(*config).pid_expiry, milliseconds(0));
  config = parse({"--by", "cgroup", "-i", "20", "./a:f"});
  EXPECT_EQ(series_expiry(*config), milliseconds(60'000));
  config = parse({"--by", "pid", "--series-expiry", "1.5s", "-i", "20", "./a:f"});
  EXPECT_EQ(series_expiry(*config), milliseconds(1'500));
  EXPECT_EQ(series_options(*config).pid_expiry, milliseconds(1'500));
  auto bad = parse({"--series-expiry", "5", "./a:f"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().exit_code(), 2);
  EXPECT_NE(bad.error().message().find("--series-expiry 5"), std::string::npos);
}

TEST(FollowTargets, OneTargetPerProgram) {
  auto followed =
      follow_targets_of({"/app/server:handle", "/app/server:db_*", "nginx:ngx_*"}, false);
  ASSERT_TRUE(followed) << followed.error().message();
  ASSERT_EQ(followed->size(), 2u);
  EXPECT_EQ((*followed)[0].program, "/app/server");
  EXPECT_EQ((*followed)[0].functions, (std::vector<std::string>{"handle", "db_*"}));
  EXPECT_EQ((*followed)[1].program, "nginx");
  EXPECT_TRUE((*followed)[1].name.empty());
}

TEST(FollowTargets, ARelativePathOrNoProgramIsRefused) {
  for (const char* target : {"./server:handle", ":handle", "app/server:handle"}) {
    SCOPED_TRACE(target);
    auto followed = follow_targets_of({target}, false);
    ASSERT_FALSE(followed);
    EXPECT_EQ(followed.error().kind, ErrorKind::kBadInput);
  }
}

TEST(FinishConfig, FollowSeriesByCgroupUnlessTold) {
  CommandLine values;
  values.targets = {"/app/server:handle"};
  values.follow = true;
  auto config = finish_config(values);
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_TRUE(config->following());
  EXPECT_TRUE(config->targets.empty());
  EXPECT_EQ(config->series_by, static_cast<uint32_t>(FL_BY_CGROUP));
  values.by = {"pid"};
  EXPECT_EQ(finish_config(values)->series_by, static_cast<uint32_t>(FL_BY_PID));
}

TEST(FinishConfig, FollowAndConfigRefuseWhatContradictsThem) {
  CommandLine follow_with_pid;
  follow_with_pid.targets = {"/app/server:handle"};
  follow_with_pid.follow = true;
  follow_with_pid.pid = 12;
  EXPECT_FALSE(finish_config(follow_with_pid));
  CommandLine follow_list;
  follow_list.targets = {"/app/server:handle"};
  follow_list.follow = true;
  follow_list.list = true;
  auto listed = finish_config(follow_list);
  ASSERT_FALSE(listed);
  EXPECT_NE(listed.error().hint.find("/proc/PID/root"), std::string::npos);
  CommandLine check_alone;
  check_alone.targets = {"/app/server:handle"};
  check_alone.check_config = true;
  EXPECT_FALSE(finish_config(check_alone));
  CommandLine config_and_targets;
  config_and_targets.config_file = "agent.yaml";
  config_and_targets.targets = {"/app/server:handle"};
  EXPECT_FALSE(finish_config(config_and_targets));
  CommandLine nothing;
  auto refused = finish_config(nothing);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("no TARGET"), std::string::npos);
}

TEST(FinishConfig, FollowHoldAndTheTestDelay) {
  CommandLine values;
  values.targets = {"/app/server:handle"};
  values.follow_hold_ms = 250;
  auto alone = finish_config(values);
  ASSERT_FALSE(alone);
  EXPECT_NE(alone.error().message().find("--follow-hold"), std::string::npos);
  values.follow = true;
  values.test_follow_delay = "3000:1234";
  auto config = finish_config(values);
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->follow_hold, std::chrono::milliseconds(250));
  EXPECT_EQ(config->test_follow_delay, std::chrono::milliseconds(3000));
  EXPECT_EQ(config->test_follow_delay_inode, std::optional<uint64_t>(1234));
  values.test_follow_delay = "200";
  config = finish_config(values);
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->test_follow_delay, std::chrono::milliseconds(200));
  EXPECT_FALSE(config->test_follow_delay_inode);
  for (const char* bad : {"x", "3000:", "3000:12x", "99999", "-1"}) {
    values.test_follow_delay = bad;
    EXPECT_FALSE(finish_config(values)) << bad;
  }
}

}  // namespace
}  // namespace funclatency
