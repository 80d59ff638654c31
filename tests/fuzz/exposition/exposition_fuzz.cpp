// libFuzzer target for the Prometheus/OpenMetrics encoder: label values of
// any bytes (quotes, newlines, invalid UTF-8), --by series labels set or not,
// any counts, any prefix and Accept header, and --slowest calls (durations
// at and around bucket edges, pid/tid, thread names and stack frame symbols
// of any bytes, long ones too) as exemplars, given both as a snapshot and as
// a Report (snapshot_of picks the frame and merges series). The exposition
// must come out whole and valid UTF-8: every line a comment or a sample with
// its labels properly quoted, OpenMetrics closed by "# EOF"; exemplars only
// in OpenMetrics, only on the latency family's buckets, each on the smallest
// bucket whose le holds it, the slowest of that bucket's calls, with labels
// of at most 128 code points (exposition.h).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/utf8.h"
#include "output/prometheus/exposition.h"

using namespace funclatency;

namespace {

constexpr int kRows = LatencyHistogram::kLog2Rows;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "exposition_fuzz: %s\n", what);
    std::abort();
  }
}

// A name or symbol from the input: any bytes, sometimes repeated to be long.
std::string long_string(FuzzedDataProvider& input, size_t max_length) {
  std::string piece = input.ConsumeRandomLengthString(max_length);
  const int copies = input.ConsumeBool() ? input.ConsumeIntegralInRange<int>(1, 40) : 1;
  std::string text;
  for (int i = 0; i < copies && text.size() < 4096; i++) text += piece;
  return text;
}

// A duration anywhere, or at, just below or just above a bucket edge.
uint64_t duration_from(FuzzedDataProvider& input, uint64_t unit_ns) {
  if (input.ConsumeBool()) return input.ConsumeIntegral<uint64_t>();
  const int row = input.ConsumeIntegralInRange<int>(0, kRows - 1);
  const uint64_t edge = (uint64_t{1} << (row + 1)) * unit_ns;
  return edge + input.ConsumeIntegralInRange<int>(-1, 1);
}

SlowCall slow_call_from(FuzzedDataProvider& input, const FunctionMetrics& function) {
  SlowCall call;
  call.duration_ns = duration_from(input, function.unit_ns);
  call.pid = input.ConsumeIntegral<int>();
  call.tid = input.ConsumeIntegral<int>();
  call.thread = long_string(input, 32);
  call.time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(input.ConsumeIntegral<int64_t>())));
  const size_t frames = input.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < frames; i++) {
    StackFrame frame;
    frame.address = input.ConsumeIntegral<uint64_t>();
    // The function's own frame, which the exemplar skips, or any symbol.
    frame.symbol = input.ConsumeBool() ? function.symbol : long_string(input, 64);
    frame.offset = input.ConsumeIntegral<uint64_t>();
    frame.binary = long_string(input, 32);
    call.stack.push_back(std::move(frame));
  }
  return call;
}

// Builds the snapshot (and the slow calls of each of its functions, slowest
// first) from the input.
MetricsSnapshot snapshot_from(FuzzedDataProvider& input,
                              std::vector<std::vector<SlowCall>>& calls) {
  MetricsSnapshot snapshot;
  snapshot.ringbuf_dropped_total = input.ConsumeIntegral<uint64_t>();
  size_t functions = input.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < functions; i++) {
    FunctionMetrics function;
    function.symbol = input.ConsumeRandomLengthString(40);
    function.binary = input.ConsumeRandomLengthString(40);
    function.pid = input.ConsumeIntegral<int>();
    const uint64_t units[] = {1, 1000, 1000000};
    function.unit_ns = units[input.ConsumeIntegralInRange<int>(0, 2)];
    for (auto& count : function.log2_counts) {
      count = input.ConsumeIntegralInRange<uint64_t>(0, 1u << 20);
      function.count += count;
    }
    function.sum_ns = input.ConsumeIntegral<uint64_t>();
    function.lost.unreturned = input.ConsumeIntegral<uint32_t>();
    function.lost.ringbuf = input.ConsumeIntegral<uint32_t>();
    // --by: series labels of any bytes, some unset (the others' then empty).
    for (auto* label : {&function.series.comm, &function.series.cgroup,
                        &function.series.container_id, &function.series.pod_uid}) {
      if (input.ConsumeBool()) *label = input.ConsumeRandomLengthString(40);
    }
    if (input.ConsumeBool()) function.series.pid = function.pid;
    function.series.other = input.ConsumeBool();
    snapshot.functions.push_back(std::move(function));
  }
  // --slowest: read after everything else, so that the seeds from before
  // exemplars still build the same series.
  calls.assign(snapshot.functions.size(), {});
  for (size_t i = 0; i < snapshot.functions.size(); i++) {
    FunctionMetrics& function = snapshot.functions[i];
    const size_t count = input.ConsumeIntegralInRange<size_t>(0, 6);
    for (size_t c = 0; c < count && input.remaining_bytes() > 0; c++) {
      calls[i].push_back(slow_call_from(input, function));
    }
    std::ranges::stable_sort(calls[i], std::ranges::greater{}, &SlowCall::duration_ns);
    for (const SlowCall& call : calls[i]) {
      function.slowest.push_back({call.duration_ns, call.pid, call.tid,
                                  exemplar_frame(call.stack, function.symbol), call.time});
    }
  }
  return snapshot;
}

// The same series as a Report: a histogram of the slow calls, the lost
// counts, the calls with their stacks; series of one label set are merged.
Report report_from(const MetricsSnapshot& snapshot,
                   const std::vector<std::vector<SlowCall>>& calls) {
  Report report;
  report.kind = Report::Kind::kTotal;
  report.ringbuf_dropped_total = snapshot.ringbuf_dropped_total;
  for (size_t i = 0; i < snapshot.functions.size(); i++) {
    const FunctionMetrics& metrics = snapshot.functions[i];
    FunctionReport function;
    function.symbol = metrics.symbol;
    function.binary = metrics.binary;
    function.pid = metrics.pid;
    function.series = metrics.series;
    function.total = LatencyHistogram(metrics.unit_ns);
    for (const SlowCall& call : calls[i]) function.total.record(call.duration_ns);
    function.total_lost = metrics.lost;
    function.total_slowest = calls[i];
    report.functions.push_back(std::move(function));
  }
  return report;
}

// --- Reading the exposition back -------------------------------------------
// The checker is not what is fuzzed: no coverage instrumentation, so that it
// neither slows the fuzzer down nor makes it keep inputs for its own branches.
#define CHECKER __attribute__((no_sanitize("coverage")))

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Exemplar {
  Labels labels;
  std::string value;
  std::string timestamp;
};

struct Sample {
  std::string name;
  Labels labels;
  std::string value;
  std::optional<Exemplar> exemplar;
};

CHECKER bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && c >= '0' && c <= '9');
}

CHECKER std::string_view take_name(std::string_view& line) {
  size_t n = 0;
  while (n < line.size() && name_char(line[n], n == 0)) n++;
  std::string_view name = line.substr(0, n);
  line.remove_prefix(n);
  return name;
}

// `{name="value",...}` with the values unescaped into `labels` (when not
// null; only the one named `only` when that is set); false when malformed.
CHECKER bool take_labels(std::string_view& line, Labels* labels, std::string_view only = {}) {
  if (!line.starts_with('{')) return false;
  line.remove_prefix(1);
  if (line.starts_with('}')) {
    line.remove_prefix(1);
    return true;
  }
  for (;;) {
    std::string_view name = take_name(line);
    if (name.empty() || !line.starts_with("=\"")) return false;
    line.remove_prefix(2);
    const bool keep = labels && (only.empty() || name == only);
    std::string value;
    for (;;) {
      size_t stop = 0;
      while (stop < line.size() && line[stop] != '"' && line[stop] != '\\' && line[stop] != '\n') {
        stop++;
      }
      if (stop == line.size()) return false;
      if (keep) value.append(line.data(), stop);
      const char c = line[stop];
      line.remove_prefix(stop + 1);
      if (c == '"') break;
      if (c == '\n' || line.empty()) return false;
      const char escaped = line[0];
      line.remove_prefix(1);
      if (escaped != 'n' && escaped != '\\' && escaped != '"') return false;
      if (keep) value += escaped == 'n' ? '\n' : escaped;
    }
    if (keep) labels->emplace_back(name, std::move(value));
    if (line.starts_with('}')) {
      line.remove_prefix(1);
      return true;
    }
    if (!line.starts_with(',')) return false;
    line.remove_prefix(1);
  }
}

CHECKER std::string take_token(std::string_view& line) {
  size_t n = std::min(line.find(' '), line.size());
  std::string token(line.substr(0, n));
  line.remove_prefix(n);
  return token;
}

// name[{labels}] value[ # {labels} value timestamp]; of the labels, only le
// is kept, and only for samples named `keep_le`.
CHECKER std::optional<Sample> parse_sample(std::string_view line, std::string_view keep_le) {
  Sample sample;
  sample.name = take_name(line);
  if (sample.name.empty()) return std::nullopt;
  Labels* labels = sample.name == keep_le ? &sample.labels : nullptr;
  if (line.starts_with('{') && !take_labels(line, labels, "le")) return std::nullopt;
  if (!line.starts_with(' ')) return std::nullopt;
  line.remove_prefix(1);
  sample.value = take_token(line);
  if (sample.value.empty()) return std::nullopt;
  if (line.empty()) return sample;
  if (!line.starts_with(" # ")) return std::nullopt;
  line.remove_prefix(3);
  Exemplar exemplar;
  if (!take_labels(line, &exemplar.labels) || !line.starts_with(' ')) return std::nullopt;
  line.remove_prefix(1);
  exemplar.value = take_token(line);
  if (!line.starts_with(' ')) return std::nullopt;
  line.remove_prefix(1);
  exemplar.timestamp = take_token(line);
  if (!line.empty()) return std::nullopt;
  sample.exemplar = std::move(exemplar);
  return sample;
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// above U+10FFFF), checked here rather than with common/utf8.h, which the
// encoder itself uses.
CHECKER bool valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char lead = *p;
    size_t length;
    uint32_t code;
    if (lead < 0x80) {
      p++;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, code = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, code = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, code = lead & 0x07;
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) < length) return false;
    for (size_t i = 1; i < length; i++) {
      if ((p[i] & 0xC0) != 0x80) return false;
      code = (code << 6) | (p[i] & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < least[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    p += length;
  }
  return true;
}

CHECKER size_t code_points(std::string_view utf8) {
  size_t count = 0;
  for (char c : utf8) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

// Exact nanoseconds of a decimal millisecond count ("0.002048"), or nullopt.
CHECKER std::optional<unsigned __int128> ms_to_ns(std::string_view ms) {
  size_t dot = std::min(ms.find('.'), ms.size());
  std::string_view whole = ms.substr(0, dot);
  std::string_view fraction = dot < ms.size() ? ms.substr(dot + 1) : std::string_view();
  if (whole.empty() || whole.size() > 20 || fraction.size() > 6) return std::nullopt;
  if (dot < ms.size() && fraction.empty()) return std::nullopt;
  unsigned __int128 ns = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    ns = ns * 10 + static_cast<unsigned>(c - '0');
  }
  for (size_t i = 0; i < 6; i++) {
    char c = i < fraction.size() ? fraction[i] : '0';
    if (c < '0' || c > '9') return std::nullopt;
    ns = ns * 10 + static_cast<unsigned>(c - '0');
  }
  return ns;
}

CHECKER const std::string* label(const Labels& labels, std::string_view name) {
  for (const auto& [key, value] : labels) {
    if (key == name) return &value;
  }
  return nullptr;
}

// What an OpenMetrics exemplar must be, whatever made it: labels pid, tid
// and perhaps frame within 128 code points, a value in ms, a timestamp in
// seconds to the millisecond.
CHECKER void check_exemplar_form(const Exemplar& exemplar) {
  size_t used = 0;
  for (const auto& [key, value] : exemplar.labels) used += code_points(key) + code_points(value);
  check(used <= kMaxExemplarLabelChars, "an exemplar's labels are over 128 code points");
  check(exemplar.labels.size() >= 2 && exemplar.labels[0].first == "pid" &&
            exemplar.labels[1].first == "tid",
        "an exemplar without pid and tid");
  check(exemplar.labels.size() == 2 ||
            (exemplar.labels.size() == 3 && exemplar.labels[2].first == "frame" &&
             !exemplar.labels[2].second.empty()),
        "an exemplar's labels are not pid, tid[, frame]");
  check(ms_to_ns(exemplar.value).has_value(), "an exemplar's value is not decimal ms");
  const std::string& ts = exemplar.timestamp;
  size_t dot = ts.find('.');
  check(dot != std::string::npos && dot > 0 && ts.size() == dot + 4 &&
            ts.find_first_not_of("0123456789.") == std::string::npos &&
            ts.find('.', dot + 1) == std::string::npos,
        "an exemplar's timestamp is not seconds.milliseconds");
}

// Reads the whole exposition; checks what holds for any snapshot and returns
// the latency family's bucket samples, in order.
CHECKER std::vector<Sample> check_exposition(const std::string& text, ExpositionFormat format,
                                             const std::string& latency_family) {
  const bool open_metrics = format == ExpositionFormat::kOpenMetrics;
  check(valid_utf8(text), "the exposition is not valid UTF-8");
  check(text.empty() || text.back() == '\n', "the exposition does not end a line");
  if (open_metrics) check(text.ends_with("# EOF\n"), "OpenMetrics without # EOF at the end");
  std::vector<Sample> buckets;
  const std::string bucket_name = latency_family + "_bucket";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.starts_with('#')) {
      check(line.starts_with("# HELP ") || line.starts_with("# TYPE ") ||
                line.starts_with("# UNIT ") || (open_metrics && line == "# EOF"),
            "a comment line of an unknown kind");
      check(line != "# EOF" || start == text.size(), "# EOF before the end");
      continue;
    }
    std::optional<Sample> sample = parse_sample(line, bucket_name);
    check(sample.has_value(), "a line that is not a sample");
    if (sample->exemplar) {
      check(open_metrics, "an exemplar in the text format 0.0.4");
      check(sample->name == bucket_name, "an exemplar off the latency family's buckets");
      check_exemplar_form(*sample->exemplar);
    }
    if (sample->name == bucket_name) buckets.push_back(std::move(*sample));
  }
  return buckets;
}

// Exemplars sit on the smallest bucket whose le holds their value: at most
// the le, above the le of the bucket before.
CHECKER void check_exemplar_buckets(const std::vector<Sample>& buckets) {
  std::optional<unsigned __int128> previous_le;
  for (const Sample& bucket : buckets) {
    const std::string* le = label(bucket.labels, "le");
    check(le != nullptr, "a bucket without le");
    std::optional<unsigned __int128> le_ns;
    if (*le != "+Inf") {
      le_ns = ms_to_ns(*le);
      check(le_ns.has_value(), "an le that is not decimal ms");
    }
    if (bucket.exemplar) {
      unsigned __int128 value = *ms_to_ns(bucket.exemplar->value);
      check(!le_ns || value <= *le_ns, "an exemplar above its bucket's le");
      check(!previous_le || value > *previous_le, "an exemplar that fits a smaller bucket");
    }
    // After +Inf, a new series starts over at its smallest le.
    previous_le = le_ns;
  }
}

// For the snapshot as given: each function's bucket lines carry, per bucket,
// the slowest of its calls there, labelled with its pid, tid and frame.
CHECKER void check_snapshot_exemplars(const MetricsSnapshot& snapshot,
                                      const std::vector<Sample>& buckets) {
  size_t line = 0;
  for (const FunctionMetrics& function : snapshot.functions) {
    const std::vector<uint32_t> rows = exposed_log2_rows(function.unit_ns);
    for (size_t b = 0; b <= rows.size(); b++, line++) {
      check(line < buckets.size(), "fewer bucket lines than series and rows");
      const uint64_t low =
          b == 0 ? 0 : (uint64_t{1} << rows[b - 1]) * 2 * function.unit_ns;  // exclusive
      const std::optional<uint64_t> high =
          b < rows.size()
              ? std::optional<uint64_t>((uint64_t{1} << (rows[b] + 1)) * function.unit_ns)
              : std::nullopt;
      const SlowCallExemplar* slowest = nullptr;
      for (const SlowCallExemplar& call : function.slowest) {
        bool here = (b == 0 || call.duration_ns > low) && (!high || call.duration_ns <= *high);
        if (here && (!slowest || call.duration_ns > slowest->duration_ns)) slowest = &call;
      }
      const Sample& sample = buckets[line];
      check(sample.exemplar.has_value() == (slowest != nullptr),
            "a bucket with calls and no exemplar, or one without calls with one");
      if (!slowest) continue;
      const Exemplar& exemplar = *sample.exemplar;
      check(*ms_to_ns(exemplar.value) == slowest->duration_ns,
            "a bucket's exemplar is not its slowest call");
      // Among calls of that duration, the one named must be one of them.
      bool matched = false;
      for (const SlowCallExemplar& call : function.slowest) {
        if (call.duration_ns != slowest->duration_ns ||
            exemplar.labels[0].second != std::to_string(call.pid) ||
            exemplar.labels[1].second != std::to_string(call.tid)) {
          continue;
        }
        const std::string frame = to_valid_utf8(call.frame);
        const std::string* named = label(exemplar.labels, "frame");
        // Whole, or cut to a prefix ending in "…"; none when there is no frame.
        const std::string_view ellipsis = "\xE2\x80\xA6";
        const bool frame_ok =
            frame.empty()
                ? named == nullptr
                : named && (*named == frame || (named->ends_with(ellipsis) &&
                                                frame.starts_with(std::string_view(*named).substr(
                                                    0, named->size() - ellipsis.size()))));
        auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(call.time.time_since_epoch())
                .count();
        if (ms < 0) ms = 0;
        char ts[40];
        std::snprintf(ts, sizeof ts, "%lld.%03lld", static_cast<long long>(ms / 1000),
                      static_cast<long long>(ms % 1000));
        if (frame_ok && exemplar.timestamp == ts) {
          matched = true;
          break;
        }
      }
      check(matched, "a bucket's exemplar names none of its slowest calls");
    }
  }
  check(line == buckets.size(), "more bucket lines than series and rows");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  (void)negotiate_format(input.ConsumeRandomLengthString(64));
  auto prefix = validate_metric_prefix(input.ConsumeRandomLengthString(16));
  const std::string metric_prefix = prefix ? *prefix : "ebpf";
  const std::string latency_family =
      (metric_prefix.empty() ? "" : metric_prefix + "_") + "function_latency_ms";

  std::vector<std::vector<SlowCall>> calls;
  const MetricsSnapshot snapshot = snapshot_from(input, calls);

  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    const std::vector<Sample> buckets = check_exposition(
        render_exposition(snapshot, format, metric_prefix), format, latency_family);
    check_exemplar_buckets(buckets);
    if (format == ExpositionFormat::kOpenMetrics) check_snapshot_exemplars(snapshot, buckets);
  }
  // Through snapshot_of, where the exemplars are (text 0.0.4 has none).
  const MetricsSnapshot merged = snapshot_of(report_from(snapshot, calls));
  check_exemplar_buckets(
      check_exposition(render_exposition(merged, ExpositionFormat::kOpenMetrics, metric_prefix),
                       ExpositionFormat::kOpenMetrics, latency_family));
  return 0;
}
