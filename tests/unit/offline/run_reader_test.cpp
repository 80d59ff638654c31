// The NDJSON reader and log2-row math: what a run's --json lines read back
// as, what they are refused for (with file:line), and what is ignored.
#include "offline/run_reader.h"

#include <gtest/gtest.h>

#include <cmath>

#include "offline/bucket_math.h"

namespace funclatency::offline {
namespace {

const std::string kInterval =
    R"({"type":"interval","time":"2026-01-01T00:00:01.500000Z","symbol":"f","binary":"/b/app",)"
    R"("mode":"events","count":3,"sum_ns":9000,"min_ns":2500,"max_ns":3500,"p50_ns":3000,)"
    R"("log2_buckets":[[2000,3999,2],[4000,7999,1]],"lost":1,"lost_unreturned":1})";

TEST(RunReader, ReadsIntervalsAndTotalsPerSeries) {
  const std::string total = R"({"type":"total","symbol":"f","binary":"/b/app","count":0,)"
                            R"("log2_buckets":[]})";
  auto run = parse_run(kInterval + "\n\n" + kInterval + "\n" + total + "\n", "r.ndjson");
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->unit_ns, 1000u);
  ASSERT_EQ(run->series.size(), 1u);
  const Series& s = run->series[0];
  EXPECT_EQ(s.key.label(), "f (app)");
  ASSERT_EQ(s.intervals.size(), 2u);
  EXPECT_EQ(s.intervals[1].line, 3u);
  EXPECT_EQ(s.intervals[0].wall.count, 3u);
  EXPECT_EQ(s.intervals[0].lost.unreturned, 1u);
  EXPECT_DOUBLE_EQ(*s.intervals[0].epoch_s, 1767225601.5);
  ASSERT_TRUE(s.total);
}

TEST(RunReader, IgnoresUnknownFieldsAndTypesAndReadsCpuSplitAndExemplars) {
  std::string line = kInterval;
  line.pop_back();
  line += R"(,"pid":7,"comm":"app","future":{"x":[1,2]},)"
          R"("oncpu":{"count":3,"sum_ns":300,"log2_buckets":[[0,1999,3]]},)"
          R"("exemplars":[{"duration_ns":3500,"tid":9,"stack":["f","main"]}]})";
  auto run = parse_run(line + "\n{\"type\":\"hello\"}\n", "r");
  ASSERT_TRUE(run) << run.error().message();
  const Record& r = run->series[0].intervals[0];
  EXPECT_EQ(run->series[0].key.pid, 7);
  ASSERT_TRUE(r.oncpu);
  EXPECT_EQ(r.oncpu->count, 3u);
  EXPECT_FALSE(r.blocked);
  ASSERT_EQ(r.exemplars.size(), 1u);
  EXPECT_EQ(r.exemplars[0].duration_ns, 3500u);
  EXPECT_EQ(r.exemplars[0].description, "stack=f <- main  tid=9");
}

// --self: the object "self" reads back as the self histogram.
TEST(RunReader, ReadsTheSelfHistogram) {
  std::string line = kInterval;
  line.pop_back();
  line += R"(,"self":{"count":3,"sum_ns":4500,"log2_buckets":[[0,1999,3]]}})";
  auto run = parse_run(line + "\n" + kInterval + "\n", "r");
  ASSERT_TRUE(run) << run.error().message();
  const Record& r = run->series[0].intervals[0];
  ASSERT_TRUE(r.self);
  EXPECT_EQ(r.self->count, 3u);
  EXPECT_EQ(r.self->sum_ns, 4500u);
  EXPECT_FALSE(run->series[0].intervals[1].self);
}

// What `--slowest` writes: frames read as the console prints them, and the
// --slower-than lines (type slow_call) are skipped.
TEST(RunReader, ExemplarStackFramesReadAsTheConsolePrintsThem) {
  std::string line = kInterval;
  line.pop_back();
  line += R"(,"exemplars":[{"duration_ns":5000,"stack":[)"
          R"({"address":"0x10","symbol":"slow","offset":26,"binary":"/bin/a"},)"
          R"({"address":"0x7f00","binary":"/lib/libc.so.6"},{"address":"0x99"}]}]})";
  auto run = parse_run(line + "\n" + R"({"type":"slow_call","duration_ns":7})" + "\n", "r");
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->series.size(), 1u);
  const Record& r = run->series[0].intervals[0];
  ASSERT_EQ(r.exemplars.size(), 1u);
  EXPECT_EQ(r.exemplars[0].description,
            "stack=slow+0x1a (/bin/a) <- 0x7f00 (/lib/libc.so.6) <- 0x99");
}

TEST(RunReader, RefusesWithFileAndLine) {
  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {kInterval + "\n" + kInterval.substr(0, 50), "r:2: truncated JSON record"},
      {"[1]", "r:1: not a JSON object"},
      {"{\"type\":\"interval\"}", "r:1: no \"symbol\" field"},
      {kInterval.substr(0, kInterval.find("\"count\":3")) + "\"count\":4" +
           kInterval.substr(kInterval.find("\"count\":3") + 9),
       "r:1: \"count\" is 4 but its log2_buckets hold 3 calls"},
      {"\n", "r: no interval or total records"},
  };
  for (const Case& c : cases) {
    auto run = parse_run(c.text, "r");
    ASSERT_FALSE(run) << c.want;
    EXPECT_EQ(run.error().exit_code(), 2);
    EXPECT_EQ(run.error().context.substr(0, c.want.size()), c.want) << run.error().message();
  }
}

TEST(BucketMath, FindsTheUnitFromRowEdges) {
  EXPECT_EQ(unit_of_buckets({{256000, 511999, 1}}), 1000u);
  EXPECT_EQ(unit_of_buckets({{0, 1999999, 1}, {256000000, 511999999, 1}}), 1000000u);
  EXPECT_EQ(unit_of_buckets({{262144, 524287, 1}}), 1u);
  EXPECT_EQ(unit_of_buckets({}), 0u);
  EXPECT_FALSE(unit_of_buckets({{256000, 400000, 1}}));
}

TEST(BucketMath, EstimatesQuantilesInsideRows) {
  RecordedRows rows(10, 0);
  rows[8] = 100;  // 256..511 us
  EXPECT_NEAR(estimate_quantile_ns(rows, 1000, 0.5), 256000 * std::sqrt(2.0), 1);
  EXPECT_NEAR(estimate_quantile_ns(rows, 1000, 1.0), 512000, 1);
  EXPECT_EQ(estimate_quantile_ns(rows, 1000, 0.5, 300000, 310000), 310000);
  EXPECT_EQ(estimate_quantile_ns(RecordedRows{}, 1000, 0.5), 0);
}

}  // namespace
}  // namespace funclatency::offline
