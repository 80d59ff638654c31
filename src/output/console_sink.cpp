#include "output/console_sink.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace funclatency {

namespace {
constexpr int kBarWidth = 40;
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
    out += fmt::format("{}: {} calls\n", function.symbol, h.count());
    out += format_histogram(h, options.unit_name);
    out += format_summary(h, lost);
    out += "\n";
  }
  return out;
}

void ConsoleSink::write(const Report& report) {
  if (broken_) return;
  if (report.kind == Report::Kind::kTotal && !options_.print_total) return;
  std::string text = format_report(report, options_);
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0) {
    // Most often EPIPE: the reader (e.g. `| head`) went away.
    broken_ = true;
  }
}

}  // namespace funclatency
