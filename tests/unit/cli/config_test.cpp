#include "cli/config.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

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

}  // namespace
}  // namespace funclatency
