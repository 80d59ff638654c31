// The exposition text (see exposition.h): one pass over a snapshot, every
// line built here so both formats stay in step.
#include "output/prometheus/exposition.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>

#include "common/text.h"
#include "common/utf8.h"
#include "output/metric_names.h"

namespace funclatency {

namespace {

void append_uint(std::string& out, uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

struct MetricNames {
  std::string latency;  // histogram family
  std::string lost;     // counter family, without _total
  std::string ringbuf;  // counter family, without _total
};

namespace names = metric_names;

MetricNames families(std::string_view prefix) {
  return {names::prometheus_family(names::kLatency, prefix),
          names::prometheus_family(names::kFunctionLostCalls, prefix),
          names::prometheus_family(names::kRingbufDroppedCalls, prefix)};
}

// --cpu-split: a histogram family per part of the wall time.
struct SplitPart {
  std::string_view name;  // metric_names.h
  std::string_view help;
  LatencyHistogram CpuSplit::*histogram;
  HistogramTotals SplitTotals::*totals;
};
constexpr SplitPart kSplitParts[] = {
    {names::kOncpu,
     "Time calls to a traced function spent running on a CPU, in milliseconds (--cpu-split).",
     &CpuSplit::oncpu, &SplitTotals::oncpu},
    {names::kRunnable,
     "Time calls to a traced function spent switched out while runnable, waiting for a CPU, in "
     "milliseconds (--cpu-split).",
     &CpuSplit::runnable, &SplitTotals::runnable},
    {names::kBlocked,
     "Time calls to a traced function spent switched out while sleeping (a lock, I/O, a sleep), "
     "in milliseconds (--cpu-split).",
     &CpuSplit::blocked, &SplitTotals::blocked},
};

// HELP, TYPE (and UNIT) lines. In OpenMetrics the metadata names the family,
// which for a counter is the sample name without _total; in text 0.0.4 it
// names the sample itself.
void append_metadata(std::string& out, ExpositionFormat format, const std::string& family,
                     std::string_view type, std::string_view unit, std::string_view help) {
  bool open_metrics = format == ExpositionFormat::kOpenMetrics;
  std::string name = family;
  if (!open_metrics && type == "counter") name += names::kCounterSuffix;
  out += "# HELP " + name + " ";
  out += help;
  out += "\n# TYPE " + name + " ";
  out += type;
  out += "\n";
  if (open_metrics && !unit.empty()) {
    out += "# UNIT " + name + " ";
    out += unit;
    out += "\n";
  }
}

// The labels after symbol and binary, in this order: pid (-p, or --by pid)
// and the --by series' own.
constexpr std::string_view kSeriesLabelNames[] = {
    names::kSeriesPid.prometheus,        names::kComm.prometheus,   names::kCgroup.prometheus,
    names::kContainerId.prometheus,      names::kPodUid.prometheus, names::kSeries.prometheus,
    names::kContainerRuntime.prometheus, names::kRetval.prometheus, names::kArg.prometheus,
    names::kArgIndex.prometheus};
static_assert(names::kPid.prometheus == names::kSeriesPid.prometheus, "one pid label");
constexpr size_t kSeriesLabelCount = std::size(kSeriesLabelNames);
using SeriesLabelValues = std::array<std::optional<std::string>, kSeriesLabelCount>;

SeriesLabelValues series_label_values(const FunctionMetrics& function) {
  const SeriesLabels& series = function.series;
  SeriesLabelValues values;
  if (function.pid != 0) values[0] = std::to_string(function.pid);
  values[1] = series.comm;
  values[2] = series.cgroup;
  values[3] = series.container_id;
  values[4] = series.pod_uid;
  if (series.other) values[5] = "other";
  values[6] = series.runtime;
  values[7] = series.retval;
  values[8] = series.arg;
  if (series.arg_index) values[9] = std::to_string(*series.arg_index);
  return values;
}

// Which labels every series of the scrape carries, empty where they do not
// apply: those that one series has. Without --by pid, a pid label (from -p)
// stays where it is set, as it always was.
using SharedLabels = std::array<bool, kSeriesLabelCount>;
SharedLabels shared_labels(const MetricsSnapshot& snapshot) {
  SharedLabels shared{};
  for (const FunctionMetrics& function : snapshot.functions) {
    auto values = series_label_values(function);
    shared[0] = shared[0] || function.series.pid.has_value();
    for (size_t i = 1; i < kSeriesLabelCount; i++) shared[i] = shared[i] || values[i].has_value();
  }
  return shared;
}

// `{symbol="...",binary="..."` and the series labels, left open for one more
// label.
std::string series_labels(const FunctionMetrics& function, const SharedLabels& shared) {
  std::string labels = "{" + std::string(names::kSymbol.prometheus) + "=\"" +
                       escape_label_value(function.symbol) + "\"," +
                       std::string(names::kBinary.prometheus) + "=\"" +
                       escape_label_value(function.binary) + "\"";
  auto values = series_label_values(function);
  for (size_t i = 0; i < kSeriesLabelCount; i++) {
    if (!values[i] && !shared[i]) continue;
    labels += ",";
    labels += kSeriesLabelNames[i];
    labels += "=\"" + escape_label_value(values[i].value_or("")) + "\"";
  }
  return labels;
}

// Code points of valid UTF-8: the bytes that do not continue a sequence.
size_t code_points(std::string_view utf8) {
  return static_cast<size_t>(std::ranges::count_if(
      utf8, [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The first `count` code points of valid UTF-8.
std::string_view first_code_points(std::string_view utf8, size_t count) {
  size_t end = 0;
  for (; end < utf8.size(); end++) {
    bool starts = (static_cast<unsigned char>(utf8[end]) & 0xC0) != 0x80;
    if (starts && count-- == 0) break;
  }
  return utf8.substr(0, end);
}

// --slowest: per bucket line of `rows` (and +Inf last), the slowest call whose
// value is at most the bucket's le and above the one before's.
std::vector<const SlowCallExemplar*> exemplars_by_bucket(const std::vector<SlowCallExemplar>& calls,
                                                         const std::vector<uint32_t>& rows,
                                                         uint64_t unit_ns) {
  std::vector<const SlowCallExemplar*> by_bucket(rows.size() + 1, nullptr);
  for (const SlowCallExemplar& call : calls) {
    size_t bucket = 0;
    while (bucket < rows.size() &&
           (uint64_t{1} << (rows[bucket] + 1)) * unit_ns < call.duration_ns) {
      bucket++;
    }
    const SlowCallExemplar*& best = by_bucket[bucket];
    if (!best || best->duration_ns < call.duration_ns) best = &call;
  }
  return by_bucket;
}

void append_exemplar(std::string& out, const std::vector<const SlowCallExemplar*>& by_bucket,
                     size_t bucket) {
  if (bucket < by_bucket.size() && by_bucket[bucket]) out += format_exemplar(*by_bucket[bucket]);
}

// One series of `family`: `totals`, labelled `labels` (series_labels) and in
// the unit of `function`; with `exemplars` (OpenMetrics' latency family), the
// function's slow calls on its bucket lines.
void append_histogram(std::string& out, const std::string& family, const FunctionMetrics& function,
                      const std::string& labels, const HistogramTotals& totals,
                      bool exemplars = false) {
  const std::vector<uint32_t> rows = exposed_log2_rows(function.unit_ns);
  std::vector<const SlowCallExemplar*> by_bucket;
  if (exemplars) by_bucket = exemplars_by_bucket(function.slowest, rows, function.unit_ns);
  // Kernel-side counters are read CPU by CPU while probes run, so the row sum
  // may briefly differ from the count; clamping keeps buckets cumulative and
  // +Inf equal to _count, as scrapers require.
  uint64_t cumulative = 0;
  for (size_t i = 0; i < rows.size(); i++) {
    cumulative += totals.log2_counts[rows[i]];
    uint64_t edge_ns = LatencyHistogram::row_end(rows[i]) * function.unit_ns;
    out += family + "_bucket" + labels + ",le=\"" + format_ns_as_ms(edge_ns) + "\"} ";
    append_uint(out, std::min(cumulative, totals.count));
    append_exemplar(out, by_bucket, i);
    out += '\n';
  }
  out += family + "_bucket" + labels + ",le=\"+Inf\"} ";
  append_uint(out, totals.count);
  append_exemplar(out, by_bucket, rows.size());
  out += '\n' + family + "_sum" + labels + "} " + format_ns_as_ms(totals.sum_ns) + '\n';
  out += family + "_count" + labels + "} ";
  append_uint(out, totals.count);
  out += '\n';
}

void append_lost(std::string& out, const std::string& sample_name, const FunctionMetrics& function,
                 const std::string& labels) {
  const std::pair<std::string_view, uint64_t> call_reasons[] = {
      {"unreturned", function.lost.unreturned},
      {"depth", function.lost.depth},
      {"ringbuf", function.lost.ringbuf},
  };
  // A span's: started again before its end, no room, open at the end.
  const std::pair<std::string_view, uint64_t> span_reasons[] = {
      {"reused", function.lost.span_reused},
      {"full", function.lost.span_full},
      {"open", function.lost.span_open},
      {"ringbuf", function.lost.ringbuf},
  };
  for (const auto& [reason, value] :
       function.span ? std::span<const std::pair<std::string_view, uint64_t>>(span_reasons)
                     : std::span<const std::pair<std::string_view, uint64_t>>(call_reasons)) {
    out += sample_name + labels + "," + std::string(names::kReason.prometheus) + "=\"";
    out += reason;
    out += "\"} ";
    append_uint(out, value);
    out += '\n';
  }
}

// Every label name the exposition gives a sample of its own; a --config
// label of one of these names is renamed (exported_labels).
constexpr std::string_view kOwnLabelNames[] = {names::kSymbol.prometheus,
                                               names::kBinary.prometheus,
                                               names::kPid.prometheus,
                                               names::kComm.prometheus,
                                               names::kCgroup.prometheus,
                                               names::kContainerId.prometheus,
                                               names::kPodUid.prometheus,
                                               names::kSeries.prometheus,
                                               "le",
                                               names::kReason.prometheus,
                                               "quantile",
                                               names::kContainerRuntime.prometheus,
                                               names::kRetval.prometheus,
                                               names::kArg.prometheus,
                                               names::kArgIndex.prometheus};

// --config: the target's labels, every name that a series of the scrape has,
// in the order they first appear.
std::vector<std::string> config_label_names(const MetricsSnapshot& snapshot) {
  std::vector<std::string> names;
  for (const FunctionMetrics& function : snapshot.functions) {
    for (const auto& [name, value] : function.labels) {
      if (std::ranges::find(names, name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

// `,name="value"` for each of `names`, empty where `function` has no such label.
std::string config_labels(const FunctionMetrics& function, const std::vector<std::string>& names) {
  std::string labels;
  for (const std::string& name : names) {
    auto found = std::ranges::find(function.labels, name, &LabelList::value_type::first);
    labels += "," + name + "=\"";
    if (found != function.labels.end()) labels += escape_label_value(found->second);
    labels += "\"";
  }
  return labels;
}

// A sample value: integers as integers, others in the shortest exact form.
void append_value(std::string& out, double value) {
  char digits[32];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

// --follow/--config: the agent's own families, unprefixed.
void append_self_metrics(std::string& out, ExpositionFormat format,
                         const std::vector<SelfMetric>& metrics) {
  for (const SelfMetric& metric : metrics) {
    const bool counter = metric.kind == SelfMetricKind::kCounter;
    const std::string family(metric.name);
    append_metadata(out, format, family, counter ? "counter" : "gauge", metric.openmetrics_unit,
                    metric.help);
    const std::string sample = counter ? family + std::string(names::kCounterSuffix) : family;
    for (const SelfMetricSample& value : metric.samples) {
      out += sample;
      if (!metric.label.prometheus.empty()) {
        out += "{";
        out += metric.label.prometheus;
        out += "=\"" + escape_label_value(value.label_value) + "\"}";
      }
      out += ' ';
      append_value(out, value.value);
      out += '\n';
    }
  }
}

// What tells two functions' series apart beyond symbol, binary and --by:
// their --config labels, one string.
std::string config_label_key(const LabelList& labels) {
  std::string key;
  for (const auto& [name, value] : labels) key += name + '\0' + value + '\0';
  return key;
}

}  // namespace

std::vector<uint32_t> exposed_log2_rows(uint64_t unit_ns) {
  std::vector<uint32_t> rows;
  if (unit_ns == 0) return rows;
  for (uint32_t row = 0; row < LatencyHistogram::kLog2Rows; row++) {
    if (LatencyHistogram::row_end(row) > kMaxBucketEdgeNs / unit_ns) break;
    rows.push_back(row);
  }
  return rows;
}

std::string format_ns_as_ms(uint64_t ns) {
  std::string text = std::to_string(ns / 1000000);
  uint64_t fraction = ns % 1000000;
  if (fraction == 0) return text;
  std::string digits = std::to_string(fraction);
  digits.insert(0, 6 - digits.size(), '0');
  digits.erase(digits.find_last_not_of('0') + 1);
  return text + "." + digits;
}

std::string exemplar_frame(const std::vector<StackFrame>& stack, std::string_view function) {
  for (const StackFrame& frame : stack) {
    if (frame.symbol.empty() || frame.symbol == function) continue;
    return frame_text(frame, false);
  }
  return {};
}

std::string format_exemplar(const SlowCallExemplar& exemplar) {
  const std::string pid = std::to_string(exemplar.pid);
  const std::string tid = std::to_string(exemplar.tid);
  std::string labels = " # {" + std::string(names::kExemplarPid.prometheus) + "=\"" + pid + "\"," +
                       std::string(names::kExemplarTid.prometheus) + "=\"" + tid + "\"";
  // OpenMetrics counts the names' and values' code points, not the quoting.
  const size_t used = 3 + pid.size() + 3 + tid.size() + 5;  // pid, tid, frame
  std::string frame = to_valid_utf8(exemplar.frame);
  if (!frame.empty() && used + 2 <= kMaxExemplarLabelChars) {
    const size_t room = kMaxExemplarLabelChars - used;
    if (code_points(frame) > room) {
      frame = std::string(first_code_points(frame, room - 1)) + "\xE2\x80\xA6";  // U+2026 …
    }
    labels += "," + std::string(names::kExemplarStack.prometheus) + "=\"" +
              escape_label_value(frame) + "\"";
  }
  labels += "} " + format_ns_as_ms(exemplar.duration_ns) + " ";
  // Seconds since the epoch, to the millisecond (what Prometheus keeps).
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(exemplar.time.time_since_epoch())
                .count();
  if (ms < 0) ms = 0;
  append_uint(labels, static_cast<uint64_t>(ms / 1000));
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(ms % 1000));
  return labels + fraction;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  while (!value.empty()) {
    size_t length = utf8_sequence_length(value);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      value.remove_prefix(1);
      continue;
    }
    char c = value[0];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.append(value.data(), length);
    }
    value.remove_prefix(length);
  }
  return out;
}

HistogramTotals& HistogramTotals::operator+=(const LatencyHistogram& histogram) {
  auto rows = histogram.log2_counts();
  for (size_t r = 0; r < rows.size(); r++) log2_counts[r] += rows[r];
  count += histogram.count();
  sum_ns += histogram.sum_ns();
  return *this;
}

MetricsSnapshot snapshot_of(const Report& report) {
  MetricsSnapshot snapshot;
  snapshot.ringbuf_dropped_total = report.ringbuf_dropped_total;
  using OptionalText = std::optional<std::string_view>;
  std::map<
      std::tuple<std::string_view, std::string_view, int, OptionalText, OptionalText, OptionalText,
                 OptionalText, bool, OptionalText, std::string, OptionalText, OptionalText>,
      size_t>
      index_by_labels;
  snapshot.functions.reserve(report.functions.size());
  for (const FunctionReport& function : report.functions) {
    const SeriesLabels& series = function.series;
    // The series' pid wins over -p's: they name the same process.
    int pid = series.pid.value_or(function.pid);
    auto key = std::make_tuple(
        std::string_view(function.symbol), std::string_view(function.binary), pid,
        OptionalText(series.comm), OptionalText(series.cgroup), OptionalText(series.container_id),
        OptionalText(series.pod_uid), series.other, OptionalText(series.runtime),
        config_label_key(function.labels), OptionalText(series.retval), OptionalText(series.arg));
    auto [it, inserted] = index_by_labels.try_emplace(key, snapshot.functions.size());
    if (inserted) {
      FunctionMetrics metrics;
      metrics.symbol = function.symbol;
      metrics.binary = function.binary;
      metrics.pid = pid;
      metrics.series = series;
      metrics.unit_ns = function.total.unit_ns();
      metrics.labels = exported_labels(function.labels, kOwnLabelNames);
      metrics.span = function.span;
      snapshot.functions.push_back(std::move(metrics));
    }
    FunctionMetrics& metrics = snapshot.functions[it->second];
    metrics += function.total;
    metrics.lost += function.total_lost;
    for (const SlowCall& call : function.total_slowest) {
      metrics.slowest.push_back({call.duration_ns, call.pid, call.tid,
                                 exemplar_frame(call.stack, function.symbol), call.time});
    }
    if (function.total_split) {
      if (!metrics.split) metrics.split.emplace();
      for (const SplitPart& part : kSplitParts) {
        (*metrics.split).*part.totals += (*function.total_split).*part.histogram;
      }
    }
    if (function.total_self) {
      if (!metrics.self_time) metrics.self_time.emplace();
      *metrics.self_time += *function.total_self;
    }
  }
  snapshot.self = self_metrics(report);
  // Merged series keep their calls slowest first.
  for (FunctionMetrics& metrics : snapshot.functions) {
    std::ranges::stable_sort(metrics.slowest, std::ranges::greater{},
                             &SlowCallExemplar::duration_ns);
  }
  return snapshot;
}

// The functions' latency family, then the spans' (a span is named by its
// `span` label and has a family of its own).
void append_latency_families(std::string& out, ExpositionFormat format,
                             const MetricsSnapshot& snapshot,
                             const std::vector<std::string>& labels,
                             const std::string& latency_family, std::string_view metric_prefix) {
  for (size_t i = 0; i < snapshot.functions.size(); i++) {
    if (snapshot.functions[i].span) continue;
    append_histogram(out, latency_family, snapshot.functions[i], labels[i], snapshot.functions[i],
                     format == ExpositionFormat::kOpenMetrics);
  }
  if (std::ranges::any_of(snapshot.functions, &FunctionMetrics::span)) {
    const std::string family = names::prometheus_family(names::kSpanLatency, metric_prefix);
    append_metadata(out, format, family, "histogram", "ms",
                    "Duration of spans, from a start point (a function's entry or return) to "
                    "the end point its thread or value matches (--span), in milliseconds.");
    for (size_t i = 0; i < snapshot.functions.size(); i++) {
      if (!snapshot.functions[i].span) continue;
      append_histogram(out, family, snapshot.functions[i], labels[i], snapshot.functions[i],
                       format == ExpositionFormat::kOpenMetrics);
    }
  }
}

std::string render_exposition(const MetricsSnapshot& snapshot, ExpositionFormat format,
                              std::string_view metric_prefix) {
  MetricNames family_names = families(metric_prefix);
  std::string out;
  out.reserve(512 + snapshot.functions.size() * 4096);

  append_metadata(out, format, family_names.latency, "histogram", "ms",
                  "Duration of calls to a traced function, entry to return, in milliseconds. "
                  "Buckets are the console's log2 rows.");
  SharedLabels shared = shared_labels(snapshot);
  const std::vector<std::string> config_names = config_label_names(snapshot);
  std::vector<std::string> labels;
  labels.reserve(snapshot.functions.size());
  for (const FunctionMetrics& function : snapshot.functions) {
    labels.push_back(series_labels(function, shared) + config_labels(function, config_names));
    // A span is named by its `span` label where a function has `symbol`.
    if (function.span) {
      labels.back() = "{" + std::string(names::kSpan.prometheus) +
                      labels.back().substr(1 + names::kSymbol.prometheus.size());
    }
  }
  append_latency_families(out, format, snapshot, labels, family_names.latency, metric_prefix);

  if (std::ranges::any_of(snapshot.functions, [](const auto& f) { return f.split.has_value(); })) {
    for (const SplitPart& part : kSplitParts) {
      std::string family = names::prometheus_family(part.name, metric_prefix);
      append_metadata(out, format, family, "histogram", "ms", part.help);
      for (size_t i = 0; i < snapshot.functions.size(); i++) {
        const FunctionMetrics& function = snapshot.functions[i];
        if (function.split) {
          append_histogram(out, family, function, labels[i], *function.split.*part.totals);
        }
      }
    }
  }

  if (std::ranges::any_of(snapshot.functions,
                          [](const auto& f) { return f.self_time.has_value(); })) {
    std::string family = names::prometheus_family(names::kSelfTime, metric_prefix);
    append_metadata(out, format, family, "histogram", "ms",
                    "Self (exclusive) time of calls to a traced function: each call's time less "
                    "that of the traced calls it made directly, in milliseconds (--self).");
    for (size_t i = 0; i < snapshot.functions.size(); i++) {
      const FunctionMetrics& function = snapshot.functions[i];
      if (function.self_time)
        append_histogram(out, family, function, labels[i], *function.self_time);
    }
  }

  append_metadata(out, format, family_names.lost, "counter", "",
                  "Calls to a traced function that could not be timed, by reason: unreturned "
                  "(exception, longjmp or the return probe limit), depth (nested deeper than the "
                  "shadow stack), ringbuf (the ring buffer was full).");
  for (size_t i = 0; i < snapshot.functions.size(); i++) {
    append_lost(out, family_names.lost + std::string(names::kCounterSuffix), snapshot.functions[i],
                labels[i]);
  }

  append_metadata(out, format, family_names.ringbuf, "counter", "",
                  "Completed calls dropped because the ring buffer was full, all functions.");
  out += family_names.ringbuf + std::string(names::kCounterSuffix) + " ";
  append_uint(out, snapshot.ringbuf_dropped_total);
  out += '\n';

  append_self_metrics(out, format, snapshot.self);

  if (format == ExpositionFormat::kOpenMetrics) out += "# EOF\n";
  return out;
}

std::string render_exposition(const Report& report, ExpositionFormat format,
                              std::string_view metric_prefix) {
  return render_exposition(snapshot_of(report), format, metric_prefix);
}

ExpositionFormat negotiate_format(std::string_view accept_header) {
  // Media ranges are comma separated, each `type/subtype;param=value;q=0.5`.
  while (!accept_header.empty()) {
    size_t comma = accept_header.find(',');
    std::string_view range = accept_header.substr(0, comma);
    accept_header =
        comma == std::string_view::npos ? std::string_view() : accept_header.substr(comma + 1);
    size_t semicolon = range.find(';');
    if (trim(range.substr(0, semicolon)) != "application/openmetrics-text") continue;
    bool refused = false;
    while (semicolon != std::string_view::npos) {
      range = range.substr(semicolon + 1);
      semicolon = range.find(';');
      std::string_view param = trim(range.substr(0, semicolon));
      if (param.starts_with("q=") && param.find_first_not_of("0.", 2) == std::string_view::npos) {
        refused = true;  // q=0, q=0.0, ...: explicitly not acceptable
      }
    }
    if (!refused) return ExpositionFormat::kOpenMetrics;
  }
  return ExpositionFormat::kPrometheusText;
}

std::string_view content_type(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

Result<std::string> validate_metric_prefix(std::string_view prefix) {
  auto valid_char = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
  };
  for (size_t i = 0; i < prefix.size(); i++) {
    if (!valid_char(prefix[i], i == 0)) {
      return bad_input(
          "--prometheus-prefix \"" + std::string(prefix) + "\" would make invalid metric names",
          "use letters, digits and underscores, not starting with a digit");
    }
  }
  return std::string(prefix);
}

}  // namespace funclatency
