// parse_duration_ns: the one parser of "10ms"-style durations the command
// line and the --config file share.
#include "common/duration.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(Duration, NumberAndUnit) {
  EXPECT_EQ(parse_duration_ns("800ns"), 800u);
  EXPECT_EQ(parse_duration_ns("250us"), 250'000u);
  EXPECT_EQ(parse_duration_ns("10ms"), 10'000'000u);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1'500'000'000u);
  EXPECT_EQ(parse_duration_ns("0ms"), 0u);
}

TEST(Duration, RefusedWithOneMessage) {
  for (const char* bad : {"", "ms", "10", "1.2.3ms", "-5ms", "10 ms", "10min", ".ms", "1e99s"}) {
    auto ns = parse_duration_ns(bad);
    ASSERT_FALSE(ns) << bad;
    EXPECT_EQ(ns.error().kind, ErrorKind::kBadInput) << bad;
    EXPECT_EQ(ns.error().context, "\"" + std::string(bad) + "\" is not a duration");
  }
}

}  // namespace
}  // namespace funclatency
