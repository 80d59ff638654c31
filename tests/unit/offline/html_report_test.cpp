// The HTML renderer on small runs: one cell per non-empty (interval, row)
// with its count, column aggregation above the column cap, no script and
// nothing fetched, names escaped.
#include "offline/html_report.h"

#include <gtest/gtest.h>

#include "offline/bucket_math.h"

namespace funclatency::offline {
namespace {

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Run run_with(size_t intervals, const std::string& symbol = "f") {
  Run run;
  run.name = "r.ndjson";
  run.unit_ns = 1000;
  Series s;
  s.key = {symbol, "/b/app", {}, "", ""};
  for (size_t i = 0; i < intervals; ++i) {
    Record r;
    r.mode = i < intervals / 2 ? "events" : "kernel";
    r.wall.buckets = {{256000, 511999, 3}, {1024000, 2047999, 1}};
    r.wall.count = 4;
    r.wall.sum_ns = 2000000;
    r.wall.min_ns = 300000;
    r.wall.max_ns = 1500000;
    r.lost.total = i == 0 ? 2 : 0;
    s.intervals.push_back(r);
  }
  run.series.push_back(s);
  return run;
}

TEST(HtmlReport, OneCellPerNonEmptyIntervalAndRow) {
  const std::string html = render_html(run_with(20));
  EXPECT_EQ(occurrences(html, "class=\"cell\""), 40u);
  EXPECT_EQ(occurrences(html, "data-count=\"3\" x="), 20u);
  EXPECT_NE(html.find("256-511 us: 3 calls</title>"), std::string::npos);
  EXPECT_NE(html.find("data-percentile=\"p95\" data-points=\"20\""), std::string::npos);
  EXPECT_EQ(occurrences(html, "class=\"lost\""), 1u);
  EXPECT_EQ(occurrences(html, "class=\"mode-change\" data-mode=\"kernel\""), 1u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(HtmlReport, SumsIntervalsIntoColumnsAboveTheCap) {
  const std::string html = render_html(run_with(10000));
  EXPECT_EQ(occurrences(html, "class=\"cell\""), 1200u);
  EXPECT_NE(html.find("data-points=\"600\""), std::string::npos);
  EXPECT_LT(html.size(), 1u << 20);
}

TEST(HtmlReport, EmptyAndEscaped) {
  offline::Run run = run_with(0, "ns::f<int>&");
  run.series[0].intervals.push_back(Record{});
  const std::string html = render_html(run);
  EXPECT_NE(html.find("No calls in any interval"), std::string::npos);
  EXPECT_NE(html.find("ns::f&lt;int&gt;&amp;"), std::string::npos);
  EXPECT_EQ(html.find("f<int>"), std::string::npos);
}

}  // namespace
}  // namespace funclatency::offline
