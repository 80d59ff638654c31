#include "symbols/demangle.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(Demangle, DemanglesCppNamesAndKeepsOthers) {
  EXPECT_EQ(demangle("_ZN4shop4cart6Basket3addEi"), "shop::cart::Basket::add(int)");
  EXPECT_EQ(demangle("malloc"), "malloc");
  EXPECT_EQ(demangle("_Znot_valid"), "_Znot_valid");
}

TEST(Demangle, RustNamesInBothManglings) {
  EXPECT_EQ(demangle("_ZN1m7handler7process17h6e91de04879f2b8eE"), "m::handler::process");
  EXPECT_EQ(demangle("_RINvNtCs6xObwDLdFGl_1m7handler7genericyEB4_"), "m::handler::generic::<u64>");
  // Not Rust after all: the C++ demangler's reading.
  EXPECT_EQ(demangle("_ZN1m5a$XX$17h0123456789abcdefE"), "m::a$XX$::h0123456789abcdef");
}

TEST(DemangledNames, WhatEachKindOfNameIsMatchedBy) {
  struct Case {
    std::string_view raw, readable, unqualified, distinct;
  };
  const Case cases[] = {
      {"slow_op", "slow_op", "slow_op", ""},
      {"_ZN4shop4cart6Basket3addEi", "shop::cart::Basket::add(int)", "shop::cart::Basket::add", ""},
      {"_ZN1m7handler7generic17h3c351a77d29bfd48E", "m::handler::generic", "m::handler::generic",
       "m::handler::generic::h3c351a77d29bfd48"},
      {"_RINvNtCs6xObwDLdFGl_1m7handler7genericReEB4_", "m::handler::generic::<&str>",
       "m::handler::generic", ""},
  };
  for (const Case& c : cases) {
    const DemangledNames names = demangled_names(c.raw);
    EXPECT_EQ(names.readable, c.readable) << c.raw;
    EXPECT_EQ(names.unqualified, c.unqualified) << c.raw;
    EXPECT_EQ(names.distinct, c.distinct) << c.raw;
  }
}

TEST(WithoutParameters, StripsParametersQualifiersReturnTypeAndClones) {
  EXPECT_EQ(without_parameters("shop::cart::Basket::total() const"), "shop::cart::Basket::total");
  EXPECT_EQ(without_parameters("int shop::cart::scale<int>(int)"), "shop::cart::scale<int>");
  EXPECT_EQ(without_parameters("f(int) [clone .isra.0]"), "f");
  EXPECT_EQ(without_parameters("(anonymous namespace)::g(char*)"), "(anonymous namespace)::g");
  EXPECT_EQ(without_parameters("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(without_parameters("ns::A::operator()(int) &&"), "ns::A::operator()");
  EXPECT_EQ(without_parameters("plain_c"), "plain_c");
}

}  // namespace
}  // namespace funclatency
