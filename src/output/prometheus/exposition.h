// The Prometheus view of a Report: a pure function from cumulative totals to
// exposition text, in the Prometheus text format 0.0.4 or OpenMetrics 1.0.
//
// Latency is one histogram per traced function, named
// <prefix>_function_latency_ms, whose buckets are the console's log2 rows:
// row r holds durations below 2^(r+1) display units, so its `le` is that edge
// converted to milliseconds (2^(r+1)/1000 ms with the default usec unit). The
// bucket counts therefore equal the console rows exactly, in every unit. The
// set of `le` edges depends only on the display unit, never on the data, so
// every scrape of every series carries the same buckets and rate() and
// histogram_quantile() can combine them.
//
// With --by, each series of a function is a series of every family of the
// function (latency, CPU split, lost calls), labelled pid, comm, cgroup,
// container_id, pod_uid where known, and series="other" for the calls folded
// over --max-series. All series of a scrape carry the same label names: a
// series label that one of them has, the others have empty (which Prometheus
// reads as no label), so `sum by (le, pid)` groups the `other` series apart.
// Only what the latest report lists is exposed: a series that left the
// reports (its process exited) stops being exposed.
//
// With --cpu-split, <prefix>_function_oncpu_ms, _runnable_ms and _blocked_ms
// split each call's wall time the same way: histograms with the same labels
// and `le` edges, present once a function has the split.
//
// With --self, <prefix>_function_self_time_ms is the histogram of each
// call's exclusive time (a family of its own rather than a `kind` label on
// the latency family: sums over the latency family stay a count of calls).
//
// --slowest K, OpenMetrics only (text 0.0.4 has no exemplars, so it is as
// before): the run's K slowest calls of a series (FunctionReport::
// total_slowest; the exposition is cumulative) are exemplars of its latency
// `_bucket` lines. Each goes on the smallest bucket whose le is at least its
// value (as OpenMetrics wants it; a call of exactly 2^k units, which the
// histogram counts one bucket up, goes on le = 2^k), and a bucket line
// carries the slowest of its calls:
//   ..._bucket{...,le="16.384"} 9 # {pid="123",tid="124",frame="main+0x2f"} 12.3 1700000000.123
// The value is the call's duration in ms (exact, like le), the timestamp when
// it returned, in seconds. Labels: pid, tid, and `frame`, the innermost named
// frame that is not the function itself (its caller, mostly), shortened with
// "…" to keep the label set within OpenMetrics' 128 characters.
//
// --by cgroup: container_runtime (docker, containerd, cri-o, podman) where the
// cgroup's name says, next to container_id. --config: the target's labels
// (FunctionReport::labels: target, then the file's own) after the series
// labels on every family of the function; a name the exposition already uses
// (pid, le, reason...) becomes exported_<name> (exported_labels). Like the
// series labels, every series of a scrape carries every such name.
//
// --follow/--config: the agent's self-metrics (self_metrics.h) after the
// traced functions' families, named funclatency_* whatever the prefix:
// gauges, and counters whose samples end in _total (their OpenMetrics
// metadata names the family without it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "model/report.h"
#include "output/self_metrics.h"

namespace funclatency {

enum class ExpositionFormat {
  kPrometheusText,  // text/plain; version=0.0.4
  kOpenMetrics,     // application/openmetrics-text; version=1.0.0
};

// One histogram's running totals as exposed: its log2 rows, count and sum.
struct HistogramTotals {
  LatencyHistogram::RowCounts log2_counts{};
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  HistogramTotals& operator+=(const LatencyHistogram& histogram);
};

// --cpu-split: the totals of each part of the wall time (CpuSplit).
struct SplitTotals {
  HistogramTotals oncpu;
  HistogramTotals runnable;
  HistogramTotals blocked;
};

// --slowest: one slow call as an exemplar.
struct SlowCallExemplar {
  uint64_t duration_ns = 0;
  int pid = 0;
  int tid = 0;
  std::string frame;  // "handle+0x2f": the caller, as exemplar_frame picks it; may be empty
  std::chrono::system_clock::time_point time;  // when it returned
};

// What one exposed series is made of: the run's cumulative totals for one
// label set, small enough to copy on every report. The base holds the wall
// time's histogram.
struct FunctionMetrics : HistogramTotals {
  std::string symbol;
  std::string binary;
  int pid = 0;  // -p's, or the series' with --by pid; a label only when non-zero
  // --by: comm, cgroup, container_id, pod_uid (and series="other") labels
  // where set; `series.pid` is already in `pid`.
  SeriesLabels series;
  uint64_t unit_ns = 1000;
  LostCounts lost;
  std::optional<SplitTotals> split;          // with --cpu-split
  std::optional<HistogramTotals> self_time;  // with --self
  // --slowest: the run's slowest calls of the series, slowest first.
  std::vector<SlowCallExemplar> slowest;
  // --config: the target's labels, renamed where they clash (exported_labels).
  LabelList labels;
  // A span: its histogram is function_span_ms, its name the `span` label.
  bool span = false;
};

struct MetricsSnapshot {
  std::vector<FunctionMetrics> functions;  // one per distinct label set
  uint64_t ringbuf_dropped_total = 0;
  std::vector<SelfMetric> self;  // --follow/--config: the agent's own metrics
};

// Takes FunctionReport::total, total_split, total_self, total_lost and total_slowest of every
// function.
// Functions the labels cannot tell apart (say two static functions of one name in one binary) are
// merged, because a scrape must not carry one series twice.
MetricsSnapshot snapshot_of(const Report& report);

std::string render_exposition(const MetricsSnapshot& snapshot, ExpositionFormat format,
                              std::string_view metric_prefix);
std::string render_exposition(const Report& report, ExpositionFormat format,
                              std::string_view metric_prefix);

// The format a scraper asked for with its Accept header: OpenMetrics when it
// accepts application/openmetrics-text with a non-zero weight, else text 0.0.4.
ExpositionFormat negotiate_format(std::string_view accept_header);
std::string_view content_type(ExpositionFormat format);

// A prefix must keep metric names valid: [a-zA-Z_][a-zA-Z0-9_]*, or empty for
// no prefix at all.
Result<std::string> validate_metric_prefix(std::string_view prefix);

// The log2 rows exposed as finite buckets for a display unit: every row whose
// upper edge is at most kMaxBucketEdgeNs. Longer calls are counted in +Inf.
inline constexpr uint64_t kMaxBucketEdgeNs = (uint64_t{1} << 32) * 1000;  // ~71.6 minutes
std::vector<uint32_t> exposed_log2_rows(uint64_t unit_ns);

// Exact decimal milliseconds of a nanosecond count: 2048 -> "0.002048".
std::string format_ns_as_ms(uint64_t ns);
// The most OpenMetrics allows in an exemplar's labels: code points of the
// names and values together.
inline constexpr size_t kMaxExemplarLabelChars = 128;
// The frame an exemplar names: the innermost frame with a symbol other than
// `function` (whose own frame the exit probe may have recorded first), as
// "symbol+0x1f"; empty when no frame has one.
std::string exemplar_frame(const std::vector<StackFrame>& stack, std::string_view function);
// ` # {pid="1",tid="2",frame="..."} 0.0123 1700000000.123`, what follows a
// bucket's count; the frame is cut (ending in "…") or left out to keep the
// labels within kMaxExemplarLabelChars.
std::string format_exemplar(const SlowCallExemplar& exemplar);

// A label value as the exposition formats quote it: backslash, double quote and
// newline escaped; bytes that are not UTF-8 replaced by U+FFFD.
std::string escape_label_value(std::string_view value);

}  // namespace funclatency
