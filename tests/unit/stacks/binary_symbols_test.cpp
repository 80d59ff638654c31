// BinarySymbols: which function holds an address (nested, aliased, unsized
// symbols), file offsets through PT_LOAD, and a real file (this test).
#include "stacks/binary_symbols.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>

namespace funclatency {
namespace {

TEST(BinarySymbolsTest, FindsTheInnermostFunctionHoldingAnAddress) {
  BinarySymbols symbols({}, {
                                {0x1000, 0x1100, "outer"},
                                {0x1040, 0x1060, "nested"},
                                {0x1000, 0x1100, "outer_alias"},  // same start: one kept
                                {0x1200, 0x1200, "unsized"},      // up to the next start
                                {0x1300, 0x1310, "last"},
                            });
  EXPECT_EQ(symbols.function_count(), 4u);
  EXPECT_EQ(symbols.function_at(0xfff), nullptr);
  EXPECT_EQ(symbols.function_at(0x1000)->name, "outer");
  EXPECT_EQ(symbols.function_at(0x1040)->name, "nested");
  EXPECT_EQ(symbols.function_at(0x105f)->name, "nested");
  EXPECT_EQ(symbols.function_at(0x1060)->name, "outer");  // past nested, still in outer
  EXPECT_EQ(symbols.function_at(0x1100), nullptr);
  EXPECT_EQ(symbols.function_at(0x1250)->name, "unsized");
  EXPECT_EQ(symbols.function_at(0x130f)->name, "last");
  EXPECT_EQ(symbols.function_at(0x1310), nullptr);
}

TEST(BinarySymbolsTest, MapsFileOffsetsThroughLoadSegments) {
  BinarySymbols symbols({{.address = 0x400000, .file_offset = 0, .file_size = 0x1000},
                         {.address = 0x601000, .file_offset = 0x1000, .file_size = 0x800}},
                        {});
  EXPECT_EQ(symbols.address_at_offset(0x10), 0x400010u);
  EXPECT_EQ(symbols.address_at_offset(0x1010), 0x601010u);
  EXPECT_FALSE(symbols.address_at_offset(0x1800).has_value());
}

TEST(BinarySymbolsTest, ReadsARealFile) {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  ASSERT_GT(length, 0);
  path[length] = '\0';
  auto symbols = BinarySymbols::open(path);
  ASSERT_TRUE(symbols.has_value()) << symbols.error().message();
  EXPECT_FALSE((*symbols)->segments().empty());
  EXPECT_GT((*symbols)->function_count(), 100u);
  EXPECT_FALSE(BinarySymbols::open("/nonexistent").has_value());
  EXPECT_FALSE(BinarySymbols::open("/proc/self/status").has_value());
}

}  // namespace
}  // namespace funclatency
