// The classic funclatency console output: per function a header, the log2
// histogram in the display unit, and a summary line with percentiles. With
// --by the header names the series too: "slow_op  pid 1234 (target-app): 240 calls".
#pragma once

#include <cstdio>
#include <string>

#include "output/sink.h"

namespace funclatency {

struct ConsoleOptions {
  std::string unit_name = "usec";  // "usec", "msec" or "nsec"
  bool timestamp = false;          // -T: a time line before each interval
  bool print_total = false;        // a totals section at exit (when there were intervals)
};

class ConsoleSink : public Sink {
 public:
  ConsoleSink(std::FILE* out, ConsoleOptions options) : out_(out), options_(std::move(options)) {}
  void write(const Report& report) override;
  bool broken() const override { return broken_; }

 private:
  std::FILE* out_;
  ConsoleOptions options_;
  bool broken_ = false;
};

// Pure formatting, for tests and for the sink.
std::string format_histogram(const LatencyHistogram& histogram, const std::string& unit_name);
std::string format_summary(const LatencyHistogram& histogram, const LostCounts& lost);
// --cpu-split: a line per part (on-CPU, runnable, blocked) with its share of
// the wall time; nothing when `wall` has no calls.
std::string format_cpu_split(const CpuSplit& split, const LatencyHistogram& wall,
                             uint64_t split_unknown = 0);
std::string format_duration(uint64_t ns);
// --by: which series a function's header names, "pid 1234 (target-app)",
// "cgroup /kubepods/... (container 3f2a1b2c3d4e, pod <uid>)", or for the
// series over --max-series "other (N series folded over --max-series)".
std::string format_series(const SeriesLabels& series, uint64_t series_folded);
std::string format_report(const Report& report, const ConsoleOptions& options);

}  // namespace funclatency
