// common/names_table.h: a table's words read both ways, and the compile-time
// check that an enum's table names every value in the enum's order.
#include "common/names_table.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

enum class Colour { kRed, kGreen, kBlue };

constexpr NamedValue<Colour> kColours[] = {
    {Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}};
static_assert(names_every_value(kColours, Colour::kBlue));

// Out of order, short of the last value, or past it: refused.
constexpr NamedValue<Colour> kSwapped[] = {
    {Colour::kGreen, "green"}, {Colour::kRed, "red"}, {Colour::kBlue, "blue"}};
static_assert(!names_every_value(kSwapped, Colour::kBlue));
constexpr NamedValue<Colour> kShort[] = {{Colour::kRed, "red"}, {Colour::kGreen, "green"}};
static_assert(!names_every_value(kShort, Colour::kBlue));
static_assert(!names_every_value(kColours, Colour::kGreen));

TEST(NamesTable, NameAndValueBothWays) {
  EXPECT_EQ(name_in(kColours, Colour::kGreen), "green");
  EXPECT_EQ(value_in(kColours, "blue"), Colour::kBlue);
  EXPECT_EQ(value_in(kColours, "Blue"), std::nullopt);  // exact words only
  EXPECT_EQ(value_in(kColours, ""), std::nullopt);
}

TEST(NamesTable, CodesWithoutWordsGetTheFallback) {
  constexpr NamedValue<int> kStatus[] = {{200, "OK"}, {404, "Not Found"}};
  EXPECT_EQ(name_in(kStatus, 404), "Not Found");
  EXPECT_EQ(name_in(kStatus, 418, "Unknown"), "Unknown");
  EXPECT_EQ(name_in(kStatus, 418), "");
}

}  // namespace
}  // namespace funclatency
