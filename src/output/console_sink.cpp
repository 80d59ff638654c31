// The console sink's text: histograms, summaries, series headers and slow
// calls, each a pure function of a report so tests can pin the exact output.
#include "output/console_sink.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>
#include <vector>

#include "output/wall_time.h"

namespace funclatency {

namespace {
constexpr int kBarWidth = 40;

// A label as a terminal shows it: comm and cgroup names are whatever a
// process chose, so control bytes (an escape sequence, a newline) print as
// \xNN rather than acting on the terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

// A slow call's wall-clock time in local time, to the microsecond.
std::string local_time_of_day(std::chrono::system_clock::time_point time) {
  const auto [seconds, micros] = split_micros(time);
  return fmt::format("{:%H:%M:%S}.{:06d}", fmt::localtime(seconds), micros);
}

// "pid 1234  tid 1240 (worker)": who made a call.
std::string caller_of(const SlowCall& call) {
  std::string text = fmt::format("pid {}  tid {}", call.pid, call.tid);
  if (!call.thread.empty()) text += " (" + printable(call.thread) + ")";
  return text;
}

// --cpu-split: "  on-CPU 1.2ms  runnable 100.0us  blocked 11.0ms", where the
// call's wall time went; nothing when the split of the call is unknown.
std::string cpu_parts_of(const SlowCall& call) {
  if (!call.runnable_ns && !call.blocked_ns) return {};
  const uint64_t runnable = call.runnable_ns.value_or(0);
  const uint64_t blocked = call.blocked_ns.value_or(0);
  const uint64_t switched_out = runnable + blocked;
  const uint64_t oncpu = call.duration_ns > switched_out ? call.duration_ns - switched_out : 0;
  return fmt::format("  on-CPU {}  runnable {}  blocked {}", format_duration(oncpu),
                     format_duration(runnable), format_duration(blocked));
}

// A stack, a frame per line after `indent`, at most kMaxConsoleFrames.
std::string format_stack(const std::vector<StackFrame>& stack, std::string_view indent) {
  std::string out;
  const size_t shown = std::min(stack.size(), kMaxConsoleFrames);
  for (size_t i = 0; i < shown; i++) {
    out += fmt::format("{}{}\n", indent, format_stack_frame(stack[i]));
  }
  if (stack.size() > shown) {
    const size_t more = stack.size() - shown;
    out += fmt::format("{}... {} more frame{}\n", indent, more, more == 1 ? "" : "s");
  }
  return out;
}

}  // namespace

std::string format_stack_frame(const StackFrame& frame) {
  return printable(frame_text(frame));
}

std::string format_slow_call_line(const SlowCall& call) {
  return fmt::format("{}  {}  at {}{}", format_duration(call.duration_ns), caller_of(call),
                     local_time_of_day(call.time), cpu_parts_of(call));
}

std::string format_slowest(const std::vector<SlowCall>& calls) {
  if (calls.empty()) return {};
  std::string out = "slowest:\n";
  for (const SlowCall& call : calls) {
    out += "  " + format_slow_call_line(call) + "\n";
    out += format_stack(call.stack, "    ");
  }
  return out;
}

std::string format_slow_call(const SlowCallReport& slow, bool with_stack) {
  const SlowCall& call = slow.call;
  std::string out =
      fmt::format("{}  {}  {}  {}{}\n", local_time_of_day(call.time), printable(slow.symbol),
                  format_duration(call.duration_ns), caller_of(call), cpu_parts_of(call));
  if (with_stack) out += format_stack(call.stack, "    ");
  return out;
}

std::string format_duration(uint64_t ns) {
  if (ns < 1000) return fmt::format("{}ns", ns);
  if (ns < 1000000) return fmt::format("{:.1f}us", ns / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

std::string format_histogram(const LatencyHistogram& histogram, const std::string& unit_name) {
  auto rows = histogram.log2_rows();
  if (rows.empty()) return {};
  uint64_t max_count = 0;
  size_t low_width = 1, high_width = 1;
  for (const auto& row : rows) {
    max_count = std::max(max_count, row.count);
    low_width = std::max(low_width, fmt::formatted_size("{}", row.low_unit));
    high_width = std::max(high_width, fmt::formatted_size("{}", row.high_unit));
  }
  size_t range_width = low_width + 4 + high_width;
  std::string out = fmt::format("{:>{}}    count  distribution\n", unit_name, range_width);
  for (const auto& row : rows) {
    auto bar = static_cast<size_t>(max_count ? row.count * kBarWidth / max_count : 0);
    if (row.count > 0 && bar == 0) bar = 1;
    out += fmt::format("{:>{}} -> {:<{}} {:>8}  |{}\n", row.low_unit, low_width, row.high_unit,
                       high_width, row.count, std::string(bar, '*'));
  }
  return out;
}

std::string format_summary(const LatencyHistogram& h, const LostCounts& lost) {
  if (h.count() == 0) return fmt::format("count 0  lost {}\n", lost.total());
  return fmt::format("count {}  avg {}  min {}  max {}  p50 {}  p95 {}  p99 {}  lost {}\n",
                     h.count(), format_duration(static_cast<uint64_t>(h.mean_ns())),
                     format_duration(h.min_ns()), format_duration(h.max_ns()),
                     format_duration(h.percentile_ns(0.50)), format_duration(h.percentile_ns(0.95)),
                     format_duration(h.percentile_ns(0.99)), lost.total());
}

std::string format_cpu_split(const CpuSplit& split, const LatencyHistogram& wall,
                             uint64_t split_unknown) {
  if (wall.count() == 0) return {};
  const std::pair<const char*, const LatencyHistogram*> parts[] = {
      {"on-CPU", &split.oncpu}, {"runnable", &split.runnable}, {"blocked", &split.blocked}};
  // The wall time of the calls whose split is known: the parts add up to it.
  const uint64_t split_wall =
      split.oncpu.sum_ns() + split.runnable.sum_ns() + split.blocked.sum_ns();
  std::string out;
  for (const auto& [label, h] : parts) {
    double share = split_wall ? 100.0 * static_cast<double>(h->sum_ns()) / split_wall : 0.0;
    // Under 1% but not none reads "<1%".
    std::string percent = h->sum_ns() > 0 && share < 1 ? "<1" : fmt::format("{:.0f}", share);
    out += fmt::format("{:<8}  avg {:>8}  p50 {:>8}  p95 {:>8}  p99 {:>8}  share {:>3}%\n", label,
                       format_duration(static_cast<uint64_t>(h->mean_ns())),
                       format_duration(h->percentile_ns(0.50)),
                       format_duration(h->percentile_ns(0.95)),
                       format_duration(h->percentile_ns(0.99)), percent);
  }
  if (split_unknown) {
    out += fmt::format("split unknown for {} call{} (a context switch the tracer missed)\n",
                       split_unknown, split_unknown == 1 ? "" : "s");
  }
  return out;
}

std::string format_self_summary(const LatencyHistogram& self, const LatencyHistogram& wall) {
  const double share =
      wall.sum_ns() ? 100.0 * static_cast<double>(self.sum_ns()) / wall.sum_ns() : 0.0;
  return fmt::format(
      "self  avg {}  min {}  max {}  p50 {}  p95 {}  p99 {}  share {:.0f}%\n",
      format_duration(static_cast<uint64_t>(self.mean_ns())), format_duration(self.min_ns()),
      format_duration(self.max_ns()), format_duration(self.percentile_ns(0.50)),
      format_duration(self.percentile_ns(0.95)), format_duration(self.percentile_ns(0.99)), share);
}

std::string format_series(const SeriesLabels& series, uint64_t series_folded) {
  if (series.other) {
    return fmt::format("other ({} series folded over --max-series)", series_folded);
  }
  std::vector<std::string> parts;
  // --by retval/argN: the value class first, the caller after it.
  if (series.retval) parts.push_back("retval " + printable(*series.retval));
  if (series.arg)
    parts.push_back(fmt::format("arg{} {}", series.arg_index.value_or(0), printable(*series.arg)));
  if (series.pid) {
    parts.push_back(fmt::format("pid {}", *series.pid));
    if (series.comm) parts.back() += " (" + printable(*series.comm) + ")";
  } else if (series.comm) {
    parts.push_back("comm " + printable(*series.comm));
  }
  // The container and pod a cgroup path names, after it (or alone).
  std::vector<std::string> runtime;
  if (series.container_id) {
    // A container id is 64 hex digits; 12 tell containers apart, as docker ps shows them.
    runtime.push_back("container " +
                      printable(std::string_view(*series.container_id).substr(0, 12)));
  }
  if (series.pod_uid) runtime.push_back("pod " + printable(*series.pod_uid));
  if (series.runtime) runtime.push_back(printable(*series.runtime));
  std::string names = fmt::format("{}", fmt::join(runtime, ", "));
  if (series.cgroup) {
    parts.push_back("cgroup " + printable(*series.cgroup));
    if (!names.empty()) parts.back() += " (" + names + ")";
  } else if (!names.empty()) {
    parts.push_back(names);
  }
  return fmt::format("{}", fmt::join(parts, "  "));
}

// --config: "[target=checkout service=cart]" after the function's name.
std::string format_labels(const std::vector<std::pair<std::string, std::string>>& labels) {
  if (labels.empty()) return {};
  std::vector<std::string> parts;
  for (const auto& [name, value] : labels) parts.push_back(name + "=" + printable(value));
  return fmt::format(" [{}]", fmt::join(parts, " "));
}

// --follow/--config: the agent's own counts, the same the exporters carry.
std::string format_agent(const Report& report, const AgentStatus& agent) {
  std::vector<std::string> failures;
  for (const auto& [reason, count] : agent.attach_failures) {
    if (count) failures.push_back(fmt::format("{} {}", count, reason));
  }
  return fmt::format(
      "agent: {} function{} in {} file{} attached; {} processes seen at exec; attach failures: "
      "{}; {} ring buffer drops; {} series folded; probes cost {:.6f} s of CPU{}\n\n",
      agent.functions_attached, agent.functions_attached == 1 ? "" : "s", agent.files_attached,
      agent.files_attached == 1 ? "" : "s", agent.processes_seen,
      failures.empty() ? "none" : fmt::format("{}", fmt::join(failures, ", ")),
      report.ringbuf_dropped_total, report.series_folded, agent.probe_cpu_seconds,
      agent.config_last_reload_successful
          ? ""
          : fmt::format("; last reload failed ({} so far)", agent.config_reload_failures));
}

// A span's losses by reason, and the ends that had no start (not spans).
std::string format_span_lost(const LostCounts& lost) {
  if (!lost.total() && !lost.span_unstarted) return {};
  return fmt::format(
      "spans lost: {} started again before their end, {} with no room (--span-capacity), {} "
      "open at the end; {} ends without a start\n",
      lost.span_reused, lost.span_full, lost.span_open, lost.span_unstarted);
}

std::string format_report(const Report& report, const ConsoleOptions& options) {
  bool total = report.kind == Report::Kind::kTotal;
  std::string out;
  if (total) {
    auto seconds = std::chrono::duration<double>(report.time - report.run_start).count();
    out += fmt::format("=== total over {:.1f}s ===\n", seconds);
  } else if (options.timestamp) {
    auto local = fmt::localtime(std::chrono::system_clock::to_time_t(report.time));
    out += fmt::format("{:%H:%M:%S}\n", local);
  }
  for (const auto& function : report.functions) {
    const LatencyHistogram& h = total ? function.total : function.interval;
    const LostCounts& lost = total ? function.total_lost : function.interval_lost;
    const std::string labels = format_labels(function.labels);
    const std::string name = function.span ? "span " + function.symbol : function.symbol;
    const char* what = function.span ? "spans" : "calls";
    if (function.series.any()) {
      // A series' last report says so: its processes are gone, it expired.
      out += fmt::format("{}{}  {}: {} {}{}\n", name, labels,
                         format_series(function.series, report.series_folded), h.count(), what,
                         function.series_ended ? " (series ended: its processes are gone)" : "");
    } else {
      out += fmt::format("{}{}: {} {}\n", name, labels, h.count(), what);
    }
    out += format_histogram(h, options.unit_name);
    out += format_summary(h, lost);
    if (function.span) out += format_span_lost(lost);
    const auto& split = total ? function.total_split : function.interval_split;
    if (split) out += format_cpu_split(*split, h, lost.split_unknown);
    const auto& self = total ? function.total_self : function.interval_self;
    if (self && self->count() > 0) {
      out += "self time (less the traced calls made directly):\n";
      out += format_histogram(*self, options.unit_name);
      out += format_self_summary(*self, h);
    }
    out += format_slowest(total ? function.total_slowest : function.interval_slowest);
    out += "\n";
  }
  if (report.agent) out += format_agent(report, *report.agent);
  return out;
}

void ConsoleSink::write(const Report& report) {
  if (broken()) return;
  if (report.kind == Report::Kind::kTotal && !options_.print_total) return;
  print(format_report(report, options_));
}

void ConsoleSink::write_slow_call(const SlowCallReport& slow) {
  print(format_slow_call(slow, options_.slow_call_stacks));
}

}  // namespace funclatency
