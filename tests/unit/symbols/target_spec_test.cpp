#include "symbols/target_spec.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(ParseTarget, SplitsBinaryAndFunction) {
  auto spec = parse_target("./bin/app:slow_op", false);
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->binary, "./bin/app");
  EXPECT_EQ(spec->function, "slow_op");
  EXPECT_FALSE(spec->regex);
}

TEST(ParseTarget, KeepsCppScopesInTheFunction) {
  auto spec = parse_target("./bin:ns::Class::method", false);
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->binary, "./bin");
  EXPECT_EQ(spec->function, "ns::Class::method");
}

TEST(ParseTarget, LeadingColonLeavesTheBinaryEmpty) {
  auto spec = parse_target(":ns::f", false);
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->binary, "");
  EXPECT_EQ(spec->function, "ns::f");
}

TEST(ParseTarget, LibraryNamesAndPatterns) {
  auto spec = parse_target("libssl.so.3:SSL_*", false);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->binary, "libssl.so.3");
  EXPECT_EQ(spec->function, "SSL_*");
  auto regex = parse_target("c:^mem(cpy|set)$", true);
  ASSERT_TRUE(regex);
  EXPECT_EQ(regex->binary, "c");
  EXPECT_EQ(regex->function, "^mem(cpy|set)$");
  EXPECT_TRUE(regex->regex);
}

TEST(ParseTarget, SplitsAtTheLastSingleColon) {
  auto spec = parse_target("/odd:dir/app:f", false);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->binary, "/odd:dir/app");
  EXPECT_EQ(spec->function, "f");
  auto odd_run = parse_target("app:::f", false);
  ASSERT_TRUE(odd_run);
  EXPECT_EQ(odd_run->binary, "app");
  EXPECT_EQ(odd_run->function, "::f");
}

TEST(ParseTarget, MissingFunctionIsBadInput) {
  auto spec = parse_target("./app:", false);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(spec.error().message().find("names no function"), std::string::npos);
}

TEST(ParseTarget, MissingSeparatorIsBadInput) {
  for (const char* arg : {"slow_op", "ns::f", ""}) {
    auto spec = parse_target(arg, false);
    ASSERT_FALSE(spec) << arg;
    EXPECT_EQ(spec.error().kind, ErrorKind::kBadInput);
    EXPECT_EQ(spec.error().exit_code(), 2);
  }
}

}  // namespace
}  // namespace funclatency
