#include "symbols/name_matcher.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(NameMatcher, ExactGlobAndRegex) {
  const SymbolNames cpp{"_ZN2ns1fEi", "ns::f(int)", "ns::f"};
  auto exact = NameMatcher::create("ns::f", false);
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->is_exact());
  EXPECT_TRUE(exact->matches(cpp));
  EXPECT_FALSE(exact->matches({"ns::g", "ns::g", "ns::g"}));

  auto glob = NameMatcher::create("ns::*", false);
  ASSERT_TRUE(glob);
  EXPECT_FALSE(glob->is_exact());
  EXPECT_TRUE(glob->matches(cpp));
  auto mangled_glob = NameMatcher::create("_ZN2ns*", false);
  EXPECT_TRUE(mangled_glob->matches(cpp));
  auto question = NameMatcher::create("ns::?", false);
  EXPECT_TRUE(question->matches(cpp));

  auto regex = NameMatcher::create("^ns::f\\(int\\)$", true);
  ASSERT_TRUE(regex);
  EXPECT_TRUE(regex->matches(cpp));
  auto unanchored = NameMatcher::create("alloc", true);
  EXPECT_TRUE(unanchored->matches({"malloc", "malloc", "malloc"}));
  EXPECT_FALSE(unanchored->matches({"free", "free", "free"}));
}

TEST(NameMatcher, RustPathsWithoutHashesGenericArgumentsOrWithThem) {
  const SymbolNames legacy{"_ZN1m7handler7generic17h3c351a77d29bfd48E", "m::handler::generic",
                           "m::handler::generic", "m::handler::generic::h3c351a77d29bfd48"};
  const SymbolNames v0{"_RINvNtCs6xObwDLdFGl_1m7handler7genericyEB4_", "m::handler::generic::<u64>",
                       "m::handler::generic"};
  for (const auto* names : {&legacy, &v0}) {
    for (const char* pattern : {"m::handler::generic", "m::handler::*", "*::generic*"}) {
      auto matcher = NameMatcher::create(pattern, false);
      ASSERT_TRUE(matcher);
      EXPECT_TRUE(matcher->matches(*names)) << pattern << " " << names->raw;
    }
    EXPECT_FALSE(NameMatcher::create("*::process", false)->matches(*names));
  }
  EXPECT_TRUE(
      NameMatcher::create("m::handler::generic::h3c351a77d29bfd48", false)->matches(legacy));
  EXPECT_FALSE(
      NameMatcher::create("m::handler::generic::h0000000000000000", false)->matches(legacy));
  EXPECT_TRUE(NameMatcher::create("m::handler::generic::<u64>", false)->matches(v0));
  EXPECT_FALSE(NameMatcher::create("m::handler::generic::<&str>", false)->matches(v0));
}

TEST(NameMatcher, RegexThatDoesNotCompileIsBadInput) {
  for (const char* pattern : {"(", "a[", "*x", "a{2"}) {
    auto regex = NameMatcher::create(pattern, true);
    ASSERT_FALSE(regex) << pattern;
    EXPECT_EQ(regex.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(regex.error().message().find(pattern), std::string::npos);
  }
}

TEST(CloseNames, RanksNearNamesAndContainment) {
  const std::vector<std::string> names = {"slow_op", "fast_op", "main", "symfix_family_1",
                                          "completely_different"};
  EXPECT_EQ(close_names("slow_opp", names), (std::vector<std::string>{"slow_op", "fast_op"}));
  EXPECT_EQ(close_names("family", names), (std::vector<std::string>{"symfix_family_1"}));
  EXPECT_TRUE(close_names("zzzzzzzzzzzz", names).empty());
  std::vector<std::string> many;
  for (int i = 0; i < 20; ++i) many.push_back("work_" + std::to_string(i));
  EXPECT_EQ(close_names("work", many).size(), 5u);
}

}  // namespace
}  // namespace funclatency
