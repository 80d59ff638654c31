#include "symbols/demangle.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(Demangle, DemanglesCppNamesAndKeepsOthers) {
  EXPECT_EQ(demangle("_ZN4shop4cart6Basket3addEi"), "shop::cart::Basket::add(int)");
  EXPECT_EQ(demangle("malloc"), "malloc");
  EXPECT_EQ(demangle("_Znot_valid"), "_Znot_valid");
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
