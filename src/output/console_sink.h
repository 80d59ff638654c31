// The classic funclatency console output: per function a header, the log2
// histogram in the display unit, and a summary line with percentiles. With
// --by the header names the series too: "slow_op  pid 1234 (target-app): 240 calls".
// With --slowest K a "slowest:" block follows each function's summary: the K
// slowest calls of what the histogram shows, who made them, and their stacks.
// With --slower-than, write_slow_call prints a line per slow call as it ends
// (like BCC's funcslower), its stack below it only when asked (-v).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "model/sink.h"
#include "output/stream_sink.h"

namespace funclatency {

struct ConsoleOptions {
  std::string unit_name = "usec";  // "usec", "msec" or "nsec"
  bool timestamp = false;          // -T: a time line before each interval
  bool print_total = false;        // a totals section at exit (when there were intervals)
  // --slower-than: print each slow call's stack under its line (set from
  // -v); the --slowest block always shows stacks.
  bool slow_call_stacks = false;
};

class ConsoleSink : public StreamSink {
 public:
  ConsoleSink(std::FILE* out, ConsoleOptions options)
      : StreamSink(out), options_(std::move(options)) {}
  void write(const Report& report) override;
  void write_slow_call(const SlowCallReport& slow) override;

 private:
  ConsoleOptions options_;
};

// Pure formatting, for tests and for the sink.
std::string format_histogram(const LatencyHistogram& histogram, const std::string& unit_name);
std::string format_summary(const LatencyHistogram& histogram, const LostCounts& lost);
// --self: the self histogram's summary line; `share` is its sum over the
// wall histogram's.
std::string format_self_summary(const LatencyHistogram& self, const LatencyHistogram& wall);
// --cpu-split: a line per part (on-CPU, runnable, blocked) with its share of
// the wall time; nothing when `wall` has no calls.
std::string format_cpu_split(const CpuSplit& split, const LatencyHistogram& wall,
                             uint64_t split_unknown = 0);
std::string format_duration(uint64_t ns);
// --by: which series a function's header names, "pid 1234 (target-app)",
// "cgroup /kubepods/... (container 3f2a1b2c3d4e, pod <uid>)", or for the
// series over --max-series "other (N series folded over --max-series)".
std::string format_series(const SeriesLabels& series, uint64_t series_folded);
// At most this many frames of a stack are printed; "... N more frames" says
// how many were left out.
inline constexpr size_t kMaxConsoleFrames = 16;
// One frame: "symbol+0x1a (/usr/bin/app)", "0x7f12... (/usr/lib/libc.so.6)"
// without a symbol, "0x7f12..." when nothing is known.
std::string format_stack_frame(const StackFrame& frame);
// One slow call, without its stack: "12.30ms  pid 1234  tid 1240 (worker)
// at 14:03:07.123456" in local time, and with --cpu-split's parts "  on-CPU
// 1.2ms  runnable 100.0us  blocked 11.0ms".
std::string format_slow_call_line(const SlowCall& call);
// --slowest: "slowest:" and per call its line and its stack indented below
// it; nothing when `calls` is empty.
std::string format_slowest(const std::vector<SlowCall>& calls);
// --slower-than: "14:03:07.123456  slow_op  12.30ms  pid 1234  tid 1240
// (worker)" and the parts, then the stack when `with_stack`.
std::string format_slow_call(const SlowCallReport& slow, bool with_stack);
std::string format_report(const Report& report, const ConsoleOptions& options);

}  // namespace funclatency
