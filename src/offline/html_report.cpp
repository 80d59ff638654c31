// The HTML heatmap report (see html_report.h). Every element a test or a
// reader needs to find carries a class and data-* attributes; each heatmap
// cell's <title> is its tooltip.
#include "offline/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>

#include "offline/bucket_math.h"
#include "offline/diff_output.h"

namespace funclatency::offline {
namespace {

constexpr double kLeft = 110, kRight = 20, kTop = 28, kBottom = 44, kPlotWidth = 900;

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", sans-serif; margin: 24px; color: #1d1d1d; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 36px; border-top: 1px solid #ccc; padding-top: 12px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; } td.l, th.l { text-align: left; }
svg { display: block; margin: 8px 0; font-size: 11px; }
.axis { stroke: #555; stroke-width: 1; fill: none; }
.grid { stroke: #e4e4e4; stroke-width: 1; }
.pct { fill: none; stroke-width: 2; }
.p50 { stroke: #ffffff; } .p95 { stroke: #ff8c00; } .p99 { stroke: #e8175d; }
.pct-halo { fill: none; stroke: #000; stroke-opacity: 0.45; stroke-width: 4; }
.lost { fill: #d11; } .mode-change { stroke: #1a5fd1; stroke-width: 2; stroke-dasharray: 5 3; }
.mode-label { fill: #1a5fd1; font-weight: bold; }
.bar { fill: #3b528b; } .note { color: #666; font-size: 13px; }
.plot-bg { fill: #f7f7f7; }
)";

// viridis, five stops.
constexpr std::array<std::array<int, 3>, 5> kPalette{
    {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};

std::string color(double t) {
  t = std::clamp(t, 0.0, 1.0) * (kPalette.size() - 1);
  const size_t i = std::min<size_t>(static_cast<size_t>(t), kPalette.size() - 2);
  const double f = t - static_cast<double>(i);
  std::array<int, 3> rgb{};
  for (size_t c = 0; c < 3; ++c) {
    rgb[c] =
        static_cast<int>(std::lround(kPalette[i][c] + (kPalette[i + 1][c] - kPalette[i][c]) * f));
  }
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A row's edges in the run's unit: "256-511 us".
std::string row_label(uint32_t row, uint64_t unit_ns) {
  return fmt::format("{}-{} {}", row_low_ns(row, unit_ns) / unit_ns,
                     (row_high_ns(row, unit_ns) + 1) / unit_ns - 1, unit_name(unit_ns));
}

// One heatmap column: one interval, or several summed.
struct Column {
  size_t first = 0, last = 0;  // interval indexes, inclusive
  RecordedRows rows;
  uint64_t count = 0;
  uint64_t lost = 0, lost_unreturned = 0, lost_depth = 0, lost_ringbuf = 0;
  double p50 = 0, p95 = 0, p99 = 0;
  std::string mode_change;  // the mode this column switched to, if it did
};

std::vector<Column> make_columns(const Series& series, uint64_t unit_ns, size_t max_columns) {
  const size_t n = series.intervals.size();
  const size_t columns = std::min(n, std::max<size_t>(max_columns, 1));
  std::vector<Column> out(columns);
  std::string mode = n ? series.intervals.front().mode : "";
  for (size_t c = 0; c < columns; ++c) {
    Column& column = out[c];
    column.first = c * n / columns;
    column.last = (c + 1) * n / columns - 1;
    RecordedHistogram all;
    for (size_t i = column.first; i <= column.last; ++i) {
      const Record& r = series.intervals[i];
      all = column.first == column.last ? r.wall : merged(all, r.wall, unit_ns);
      column.lost += r.lost.total;
      column.lost_unreturned += r.lost.unreturned;
      column.lost_depth += r.lost.depth;
      column.lost_ringbuf += r.lost.ringbuf;
      // Empty intervals count too: the tool switches when the calls stop.
      if (!r.mode.empty() && r.mode != mode) {
        if (!mode.empty()) column.mode_change = r.mode;
        mode = r.mode;
      }
    }
    column.rows = row_counts(all, unit_ns);
    column.count = all.count;
    column.p50 = quantile_ns(all, unit_ns, 0.50);
    column.p95 = quantile_ns(all, unit_ns, 0.95);
    column.p99 = quantile_ns(all, unit_ns, 0.99);
  }
  return out;
}

// The whole run of one series: its total, or its intervals merged.
RecordedHistogram series_total(const Series& series, uint64_t unit_ns,
                               std::optional<RecordedHistogram> Record::*part = nullptr) {
  if (series.total) {
    if (!part) return series.total->wall;
    if ((*series.total).*part) return *((*series.total).*part);
  }
  RecordedHistogram all;
  for (const Record& r : series.intervals) {
    if (!part) {
      all = merged(all, r.wall, unit_ns);
    } else if (r.*part) {
      all = merged(all, *(r.*part), unit_ns);
    }
  }
  return all;
}

RecordedLost series_lost(const Series& series) {
  if (series.total) return series.total->lost;
  RecordedLost lost;
  for (const Record& r : series.intervals) {
    lost.total += r.lost.total;
    lost.unreturned += r.lost.unreturned;
    lost.depth += r.lost.depth;
    lost.ringbuf += r.lost.ringbuf;
  }
  return lost;
}

std::string interval_time(const Series& series, size_t index) {
  const Record& r = series.intervals[index];
  return r.time.empty() ? fmt::format("interval {}", index + 1) : r.time;
}

// Seconds of interval `index` since the first interval of the run.
double seconds_since(const Series& series, size_t index, double start) {
  const auto& at = series.intervals[index].epoch_s;
  return at && start > 0 ? *at - start : static_cast<double>(index);
}

struct Geometry {
  uint32_t min_row = 0, max_row = 0;
  double row_height = 18, column_width = 1, plot_height = 0;
  uint64_t unit_ns = 1000;
  uint64_t max_count = 0;  // the fullest cell: the top of the colour scale

  double row_top(uint32_t row) const { return kTop + (max_row - row) * row_height; }
  // y of a duration: log2 position inside the rows (linear in row 0).
  double y_of(double ns) const {
    const double units = ns / static_cast<double>(unit_ns);
    double position = units < 2 ? units / 2 : std::log2(units);
    position = std::clamp(position, static_cast<double>(min_row), max_row + 1.0);
    return kTop + (max_row + 1 - position) * row_height;
  }
  double x_of(size_t column) const { return kLeft + (column + 0.5) * column_width; }
};

std::string percentile_path(const std::vector<Column>& columns, const Geometry& g,
                            double Column::*which, const char* name) {
  std::string d;
  size_t points = 0;
  bool open = false;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].count == 0) {
      open = false;
      continue;
    }
    d += fmt::format("{}{:.1f},{:.1f} ", open ? "L" : "M", g.x_of(c), g.y_of(columns[c].*which));
    open = true;
    ++points;
  }
  if (points == 0) return "";
  return fmt::format(
      "<path class=\"pct-halo\" d=\"{0}\"/><path class=\"pct {1}\" data-percentile=\"{1}\" "
      "data-points=\"{2}\" d=\"{0}\"><title>{1}</title></path>\n",
      d, name, points);
}

// The layout of a heatmap: the rows that hold calls, and the sizes that fit
// them and the columns into the plot. Nothing when no column has a call.
std::optional<Geometry> heatmap_geometry(const std::vector<Column>& columns, uint64_t unit_ns) {
  Geometry g;
  g.unit_ns = unit_ns;
  bool any = false;
  for (const Column& column : columns) {
    for (uint32_t row = 0; row < column.rows.size(); ++row) {
      if (column.rows[row] == 0) continue;
      if (!any || row < g.min_row) g.min_row = row;
      if (!any || row > g.max_row) g.max_row = row;
      any = true;
      g.max_count = std::max(g.max_count, column.rows[row]);
    }
  }
  if (!any) return std::nullopt;
  const uint32_t rows = g.max_row - g.min_row + 1;
  g.row_height = std::clamp(360.0 / rows, 12.0, 26.0);
  g.plot_height = rows * g.row_height;
  g.column_width = kPlotWidth / static_cast<double>(columns.size());
  return g;
}

// The latency axis: a label and a grid line per row.
std::string row_grid(const Geometry& g) {
  std::string svg;
  for (uint32_t row = g.min_row; row <= g.max_row; ++row) {
    const double y = g.row_top(row);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, kLeft + kPlotWidth, y, y, kLeft - 6, y + g.row_height / 2 + 4,
        row_label(row, g.unit_ns));
  }
  return svg;
}

// One rect per non-empty cell, coloured by its count on a log scale; its
// <title> is the tooltip.
std::string heatmap_cells(const Series& series, const std::vector<Column>& columns,
                          const Geometry& g) {
  std::string svg;
  const double log_max = std::log(static_cast<double>(std::max<uint64_t>(g.max_count, 2)));
  for (size_t c = 0; c < columns.size(); ++c) {
    const Column& column = columns[c];
    const std::string when =
        column.first == column.last
            ? fmt::format("interval {} ({})", column.first + 1, interval_time(series, column.first))
            : fmt::format("intervals {}-{}", column.first + 1, column.last + 1);
    for (uint32_t row = 0; row < column.rows.size(); ++row) {
      const uint64_t count = column.rows[row];
      if (count == 0) continue;
      svg += fmt::format(
          "<rect class=\"cell\" data-first=\"{}\" data-last=\"{}\" data-row=\"{}\" "
          "data-count=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
          "fill=\"{}\"><title>{}, {}: {} calls</title></rect>\n",
          column.first, column.last, row, count, kLeft + c * g.column_width, g.row_top(row),
          g.column_width, g.row_height, color(std::log(static_cast<double>(count)) / log_max),
          escape(when), row_label(row, g.unit_ns), count);
    }
  }
  return svg;
}

// p99 first, so that p50 is drawn on top.
std::string percentile_paths(const std::vector<Column>& columns, const Geometry& g) {
  return percentile_path(columns, g, &Column::p99, "p99") +
         percentile_path(columns, g, &Column::p95, "p95") +
         percentile_path(columns, g, &Column::p50, "p50");
}

// Lost calls and mode changes on the time axis.
std::string column_marks(const std::vector<Column>& columns, const Geometry& g) {
  std::string svg;
  for (size_t c = 0; c < columns.size(); ++c) {
    const Column& column = columns[c];
    const double x = g.x_of(c);
    if (column.lost > 0) {
      svg += fmt::format(
          "<path class=\"lost\" data-lost=\"{}\" d=\"M{:.1f},{:.1f} l-5,-9 h10 z\"><title>{} "
          "calls lost (unreturned {}, depth {}, ring buffer {})</title></path>\n",
          column.lost, x, kTop - 2, column.lost, column.lost_unreturned, column.lost_depth,
          column.lost_ringbuf);
    }
    if (!column.mode_change.empty()) {
      const double edge = kLeft + c * g.column_width;
      svg += fmt::format(
          "<line class=\"mode-change\" data-mode=\"{0}\" x1=\"{1:.1f}\" x2=\"{1:.1f}\" "
          "y1=\"{2}\" y2=\"{3:.1f}\"><title>mode: {0}</title></line>"
          "<text class=\"mode-label\" x=\"{4:.1f}\" y=\"{5:.1f}\">&#8594; {0}</text>\n",
          escape(column.mode_change), edge, kTop, kTop + g.plot_height, edge + 3,
          kTop + g.plot_height + 32);
    }
  }
  return svg;
}

// The axis lines, the time ticks (about eight, seconds since the run's first
// interval) and both axis titles.
std::string axes(const Series& series, const std::vector<Column>& columns, const Geometry& g,
                 double run_start) {
  const double axis_y = kTop + g.plot_height;
  std::string svg = fmt::format("<path class=\"axis\" d=\"M{},{} V{:.1f} H{}\"/>\n", kLeft, kTop,
                                axis_y, kLeft + kPlotWidth);
  const size_t step = std::max<size_t>(1, columns.size() / 8);
  for (size_t c = 0; c < columns.size(); c += step) {
    const double x = g.x_of(c);
    svg += fmt::format(
        "<line class=\"axis\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:.1f} s</text>\n",
        x, axis_y, axis_y + 4, axis_y + 16, seconds_since(series, columns[c].first, run_start));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"middle\">time since the run started "
      "(each column: {} interval{})</text>\n",
      kLeft + kPlotWidth / 2, axis_y + 32,
      columns.empty() ? 0 : columns.front().last - columns.front().first + 1,
      columns.size() == series.intervals.size() ? "" : "s, summed");
  svg += fmt::format(
      "<text transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\">latency "
      "({})</text>\n",
      kTop + g.plot_height / 2, unit_name(g.unit_ns));
  return svg;
}

// Right of the plot: the colour scale (calls in a cell, log scale, up to the
// fullest cell) and the key to the lines and marks.
std::string legend(const Geometry& g) {
  const double lx = kLeft + kPlotWidth + 20;
  std::string svg =
      "<defs><linearGradient id=\"legend-gradient\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (size_t i = 0; i < kPalette.size(); ++i) {
    svg += fmt::format("<stop offset=\"{:.2f}\" stop-color=\"{}\"/>",
                       static_cast<double>(i) / (kPalette.size() - 1),
                       color(static_cast<double>(i) / (kPalette.size() - 1)));
  }
  svg += fmt::format(
      "</linearGradient></defs><g class=\"legend\"><rect x=\"{0}\" y=\"{1}\" width=\"14\" "
      "height=\"120\" fill=\"url(#legend-gradient)\"/><text x=\"{2}\" y=\"{3}\">{4}</text>"
      "<text x=\"{2}\" y=\"{5}\">1</text><text x=\"{0}\" y=\"{6}\">calls</text>"
      "<text x=\"{0}\" y=\"{7}\">(log)</text></g>\n",
      lx, kTop, lx + 18, kTop + 10, g.max_count, kTop + 120, kTop + 136, kTop + 148);
  svg += fmt::format(
      "<g class=\"key\"><text x=\"{0}\" y=\"{1}\" class=\"p50-key\" fill=\"#555\">&#9644; p50 "
      "(white)</text><text x=\"{0}\" y=\"{2}\" fill=\"#ff8c00\">&#9644; p95</text><text "
      "x=\"{0}\" y=\"{3}\" fill=\"#e8175d\">&#9644; p99</text><text x=\"{0}\" y=\"{4}\" "
      "fill=\"#d11\">&#9660; lost</text></g>\n",
      lx, kTop + 170, kTop + 184, kTop + 198, kTop + 212);
  return svg;
}

std::string heatmap(const Series& series, const std::vector<Column>& columns, uint64_t unit_ns,
                    double run_start) {
  const std::optional<Geometry> layout = heatmap_geometry(columns, unit_ns);
  if (!layout) return "<p class=\"note no-calls\">No calls in any interval.</p>\n";
  const Geometry& g = *layout;
  const double width = kLeft + kPlotWidth + kRight + 90;
  const double height = kTop + g.plot_height + kBottom;
  std::string svg = fmt::format(
      "<svg class=\"heatmap\" width=\"{:.0f}\" height=\"{:.0f}\" data-columns=\"{}\" "
      "data-intervals=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<rect class=\"plot-bg\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{:.1f}\"/>\n",
      width, height, columns.size(), series.intervals.size(), kLeft, kTop, kPlotWidth,
      g.plot_height);
  svg += row_grid(g);
  svg += heatmap_cells(series, columns, g);
  svg += percentile_paths(columns, g);
  svg += column_marks(columns, g);
  svg += axes(series, columns, g, run_start);
  svg += legend(g);
  return svg + "</svg>\n";
}

std::string total_histogram(const RecordedHistogram& total, uint64_t unit_ns) {
  const RecordedRows rows = row_counts(total, unit_ns);
  uint32_t first = 0;
  while (first < rows.size() && rows[first] == 0) ++first;
  if (first >= rows.size()) return "";
  uint64_t max_count = 0;
  for (uint64_t c : rows) max_count = std::max(max_count, c);
  const double bar_height = 16, width = 500;
  const size_t n = rows.size() - first;
  std::string svg = fmt::format(
      "<svg class=\"total-histogram\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      kLeft + width + 90, n * bar_height + 8);
  for (uint32_t row = first; row < rows.size(); ++row) {
    const double y = 4 + (row - first) * bar_height;
    const double w = width * static_cast<double>(rows[row]) / static_cast<double>(max_count);
    svg += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text><rect class=\"bar\" "
        "data-row=\"{}\" data-count=\"{}\" x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" "
        "height=\"{:.1f}\"><title>{}: {} calls</title></rect><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        kLeft - 6, y + 12, row_label(row, unit_ns), row, rows[row], kLeft, y, w, bar_height - 3,
        row_label(row, unit_ns), rows[row], kLeft + w + 4, y + 12, rows[row]);
  }
  return svg + "</svg>\n";
}

std::string stats_cells(const RecordedHistogram& h, uint64_t unit_ns) {
  if (h.count == 0) return "<td>0</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>";
  const double mean = static_cast<double>(h.sum_ns) / static_cast<double>(h.count);
  return fmt::format(
      "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", h.count,
      format_duration(mean), format_duration(static_cast<double>(h.min_ns)),
      format_duration(static_cast<double>(h.max_ns)),
      format_duration(quantile_ns(h, unit_ns, 0.50)),
      format_duration(quantile_ns(h, unit_ns, 0.95)),
      format_duration(quantile_ns(h, unit_ns, 0.99)));
}

std::string summary_table(const Series& series, const RecordedHistogram& total, uint64_t unit_ns) {
  const RecordedLost lost = series_lost(series);
  std::set<std::string> modes;
  for (const Record& r : series.intervals) {
    if (!r.mode.empty()) modes.insert(r.mode);
  }
  std::string mode_text;
  for (const std::string& m : modes) mode_text += (mode_text.empty() ? "" : ", ") + m;
  std::string html =
      "<table class=\"summary\"><tr><th class=\"l\"></th><th>count</th><th>avg</th><th>min</th>"
      "<th>max</th><th>p50</th><th>p95</th><th>p99</th><th>lost (unreturned / depth / ring "
      "buffer)</th><th>intervals</th><th class=\"l\">modes</th></tr>\n";
  html += fmt::format(
      "<tr><td class=\"l\">wall</td>{}<td class=\"lost-count\">{} ({} / {} / {})</td><td>{}</td>"
      "<td class=\"l\">{}</td></tr>\n",
      stats_cells(total, unit_ns), lost.total, lost.unreturned, lost.depth, lost.ringbuf,
      series.intervals.size(), escape(mode_text.empty() ? "-" : mode_text));
  // The CPU split, when the run recorded one.
  for (auto [name, part] : {std::pair{"on CPU", &Record::oncpu},
                            std::pair{"runnable (waiting for a CPU)", &Record::runnable},
                            std::pair{"blocked (sleeping)", &Record::blocked},
                            std::pair{"self (exclusive)", &Record::self}}) {
    bool present = series.total && (*series.total).*part;
    for (const Record& r : series.intervals) present = present || (r.*part).has_value();
    if (!present) continue;
    html += fmt::format(
        "<tr class=\"cpu-split\"><td class=\"l\">{}</td>{}<td></td><td></td>"
        "<td></td></tr>\n",
        name, stats_cells(series_total(series, unit_ns, part), unit_ns));
  }
  return html + "</table>\n";
}

std::string exemplar_table(const Series& series) {
  std::vector<const Exemplar*> all;
  if (series.total) {
    for (const Exemplar& e : series.total->exemplars) all.push_back(&e);
  }
  if (all.empty()) {
    for (const Record& r : series.intervals) {
      for (const Exemplar& e : r.exemplars) all.push_back(&e);
    }
  }
  if (all.empty()) return "";
  std::stable_sort(all.begin(), all.end(), [](const Exemplar* a, const Exemplar* b) {
    return a->duration_ns.value_or(0) > b->duration_ns.value_or(0);
  });
  if (all.size() > 20) all.resize(20);
  std::string html =
      "<h3>Slowest calls (exemplars)</h3><table class=\"exemplars\"><tr><th>duration</th>"
      "<th class=\"l\">call</th></tr>\n";
  for (const Exemplar* e : all) {
    html +=
        fmt::format("<tr><td>{}</td><td class=\"l\">{}</td></tr>\n",
                    e->duration_ns ? format_duration(static_cast<double>(*e->duration_ns)) : "-",
                    escape(e->description));
  }
  return html + "</table>\n";
}

double run_start(const Run& run) {
  double start = 0;
  for (const Series& s : run.series) {
    for (const Record& r : s.intervals) {
      if (r.epoch_s && (start == 0 || *r.epoch_s < start)) start = *r.epoch_s;
    }
  }
  return start;
}

}  // namespace

std::string render_html(const Run& run, const HtmlOptions& options) {
  const std::string title = options.title.empty() ? run.name : options.title;
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>funclatency report: {0}</title><style>{1}</style></head><body>\n"
      "<h1>funclatency report: {0}</h1>\n<p class=\"note\">{2} function{3}, {4} interval "
      "records, latency in {5}. Heatmap: time across, log2 latency rows up, colour = calls "
      "(log scale); lines: p50, p95, p99 per column; &#9660; lost calls; dashed blue: mode "
      "change. Hover a cell for its count.</p>\n",
      escape(title), kStyle, run.series.size(), run.series.size() == 1 ? "" : "s",
      run.interval_records, unit_name(run.unit_ns));
  const double start = run_start(run);
  for (const Series& series : run.series) {
    const RecordedHistogram total = series_total(series, run.unit_ns);
    html += fmt::format("<section class=\"function\" data-symbol=\"{}\">\n<h2>{}</h2>\n",
                        escape(series.key.symbol), escape(series.key.label()));
    html += summary_table(series, total, run.unit_ns);
    if (series.intervals.empty()) {
      html += "<p class=\"note\">No interval records (run without -i): the total only.</p>\n";
    } else {
      html += heatmap(series, make_columns(series, run.unit_ns, options.max_columns), run.unit_ns,
                      start);
    }
    if (total.count > 0) {
      html += "<h3>Whole run</h3>\n" + total_histogram(total, run.unit_ns);
    }
    html += exemplar_table(series);
    html += "</section>\n";
  }
  return html + "</body></html>\n";
}

}  // namespace funclatency::offline
