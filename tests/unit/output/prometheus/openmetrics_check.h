// A strict OpenMetrics 1.0.0 text checker for the tests: promtool only parses
// the text format 0.0.4, so this is what holds the OpenMetrics exposition
// (exemplars included) to the specification's grammar and rules. It returns
// every problem as "line N: what"; none means the text is valid.
//
// Checked: the ABNF (names, label sets, escapes, numbers, timestamps,
// exemplars, "# EOF" last), metadata (TYPE/HELP/UNIT at most once per
// family, before its samples, UNIT a suffix of the name), families not
// interleaved, sample names per type (counter: _total/_created; histogram:
// _bucket/_count/_sum/_created; gauge, unknown: the name), no series twice,
// histogram buckets (le increasing, ending in +Inf, counts cumulative, +Inf
// equal to _count), counters not negative, exemplars only on _bucket and
// _total samples, within their bucket, with at most 128 code points of label
// names and values.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/utf8.h"

namespace funclatency::testing {

// An exposition's lines, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

class OpenMetricsChecker {
 public:
  std::vector<std::string> check(std::string_view text) {
    if (text.empty() || text.back() != '\n') {
      // The exposition may end without a newline only right after "# EOF".
      if (!text.ends_with("# EOF")) fail(0, "does not end with a newline");
    }
    size_t line_number = 0;
    bool eof = false;
    while (!text.empty()) {
      ++line_number;
      size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
      if (eof) {
        fail(line_number, "text after # EOF");
        break;
      }
      if (line == "# EOF") {
        eof = true;
        continue;
      }
      line_ = line_number;
      if (line.starts_with("#")) {
        descriptor(line);
      } else {
        sample(line);
      }
    }
    if (!eof) fail(line_number, "no # EOF line at the end");
    finish_family();
    return errors_;
  }

 private:
  struct Family {
    std::string name;
    std::string type = "unknown";
    bool has_type = false, has_help = false, has_unit = false, has_samples = false;
  };
  // One histogram series (labels without le) as its lines come.
  struct HistogramSeries {
    double last_le = -INFINITY;
    double last_count = 0;
    bool has_inf = false;
    double inf_count = 0;
    std::optional<double> count;
  };

  void fail(size_t line, const std::string& what) {
    errors_.push_back("line " + std::to_string(line) + ": " + what);
  }
  void fail(const std::string& what) { fail(line_, what); }

  static bool name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
  }
  static bool label_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
  }

  // A metric name at the start of `text`, consumed; empty when there is none.
  static std::string take_name(std::string_view& text) {
    size_t n = 0;
    while (n < text.size() && name_char(text[n], n == 0)) n++;
    std::string name(text.substr(0, n));
    text.remove_prefix(n);
    return name;
  }

  // A double-quoted escaped-string; nullopt (and a failure) when malformed.
  std::optional<std::string> take_quoted(std::string_view& text) {
    if (text.empty() || text[0] != '"') {
      fail("label value not quoted");
      return std::nullopt;
    }
    text.remove_prefix(1);
    std::string value;
    while (!text.empty() && text[0] != '"') {
      if (text[0] == '\n') {
        fail("raw newline in a label value");
        return std::nullopt;
      }
      if (text[0] == '\\') {
        if (text.size() < 2 || (text[1] != '\\' && text[1] != '"' && text[1] != 'n')) {
          fail("bad escape in a label value");
          return std::nullopt;
        }
        value += text[1] == 'n' ? '\n' : text[1];
        text.remove_prefix(2);
        continue;
      }
      size_t length = utf8_sequence_length(text);
      if (length == 0) {
        fail("label value is not UTF-8");
        return std::nullopt;
      }
      value.append(text.substr(0, length));
      text.remove_prefix(length);
    }
    if (text.empty()) {
      fail("unterminated label value");
      return std::nullopt;
    }
    text.remove_prefix(1);
    return value;
  }

  // "{a="x",b="y"}"; nullopt on a syntax error.
  std::optional<std::vector<std::pair<std::string, std::string>>> take_labels(
      std::string_view& text) {
    std::vector<std::pair<std::string, std::string>> labels;
    text.remove_prefix(1);  // '{'
    if (!text.empty() && text[0] == '}') {
      text.remove_prefix(1);
      return labels;
    }
    while (true) {
      size_t n = 0;
      while (n < text.size() && label_char(text[n], n == 0)) n++;
      if (n == 0) {
        fail("bad label name");
        return std::nullopt;
      }
      std::string name(text.substr(0, n));
      text.remove_prefix(n);
      if (text.empty() || text[0] != '=') {
        fail("no = after label " + name);
        return std::nullopt;
      }
      text.remove_prefix(1);
      auto value = take_quoted(text);
      if (!value) return std::nullopt;
      for (const auto& [other, unused] : labels) {
        if (other == name) fail("label " + name + " twice");
      }
      labels.emplace_back(name, *value);
      if (text.empty()) {
        fail("unterminated label set");
        return std::nullopt;
      }
      if (text[0] == '}') {
        text.remove_prefix(1);
        return labels;
      }
      if (text[0] != ',') {
        fail("expected , or } in a label set");
        return std::nullopt;
      }
      text.remove_prefix(1);
    }
  }

  // A number as the ABNF has it: a real number, +Inf/-Inf, NaN.
  std::optional<double> parse_number(std::string_view token) {
    if (token == "+Inf" || token == "+inf") return INFINITY;
    if (token == "-Inf" || token == "-inf") return -INFINITY;
    if (token == "NaN") return NAN;
    std::string text(token);
    if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos) {
      fail("not a number: \"" + text + "\"");
      return std::nullopt;
    }
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      fail("not a number: \"" + text + "\"");
      return std::nullopt;
    }
    return value;
  }

  std::string_view take_token(std::string_view& text) {
    size_t end = text.find(' ');
    std::string_view token = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end);
    return token;
  }

  void finish_family() {
    for (const auto& [labels, series] : histograms_) {
      if (!series.has_inf) fail("histogram series " + labels + " has no +Inf bucket");
      if (!series.count) {
        fail("histogram series " + labels + " has no _count");
      } else if (series.has_inf && *series.count != series.inf_count) {
        fail("histogram series " + labels + ": _count differs from the +Inf bucket");
      }
    }
    histograms_.clear();
  }

  Family& family_named(const std::string& name) {
    if (family_.name != name) {
      if (seen_families_.contains(name)) fail("family " + name + " interleaved with another");
      finish_family();
      seen_families_.insert(name);
      family_ = Family{name};
    }
    return family_;
  }

  void descriptor(std::string_view line) {
    std::string_view rest = line;
    if (!rest.starts_with("# ")) return fail("comment that is not HELP, TYPE or UNIT");
    rest.remove_prefix(2);
    std::string_view keyword = take_token(rest);
    if (rest.empty() || rest[0] != ' ') return fail("descriptor without a name");
    rest.remove_prefix(1);
    std::string name = take_name(rest);
    if (name.empty()) return fail("descriptor with a bad metric name");
    if (!rest.empty() && rest[0] != ' ') return fail("bad character in a metric name");
    if (!rest.empty()) rest.remove_prefix(1);
    Family& family = family_named(name);
    if (family.has_samples) fail("metadata of " + name + " after its samples");
    if (keyword == "TYPE") {
      if (family.has_type) fail("second TYPE for " + name);
      static const std::set<std::string_view> kTypes = {"counter",        "gauge",    "histogram",
                                                        "gaugehistogram", "stateset", "info",
                                                        "summary",        "unknown"};
      if (!kTypes.contains(rest)) fail("unknown type \"" + std::string(rest) + "\"");
      if (rest == "counter" && name.ends_with("_total")) {
        fail("counter family " + name + " named with _total");
      }
      family.type = rest;
      family.has_type = true;
    } else if (keyword == "HELP") {
      if (family.has_help) fail("second HELP for " + name);
      family.has_help = true;
      for (size_t i = 0; i < rest.size(); i++) {
        if (rest[i] == '\\' &&
            (i + 1 == rest.size() ||
             (rest[i + 1] != '\\' && rest[i + 1] != '"' && rest[i + 1] != 'n'))) {
          fail("bad escape in HELP");
        }
        if (rest[i] == '\\') i++;
      }
    } else if (keyword == "UNIT") {
      if (family.has_unit) fail("second UNIT for " + name);
      family.has_unit = true;
      for (char c : rest) {
        if (!name_char(c, false)) fail("bad character in UNIT");
      }
      if (!rest.empty() && !name.ends_with("_" + std::string(rest))) {
        fail("UNIT " + std::string(rest) + " is not a suffix of " + name);
      }
    } else {
      fail("unknown descriptor " + std::string(keyword));
    }
  }

  // Which family a sample name belongs to, and its suffix, given the current
  // family; a new family (type unknown) when it does not fit.
  std::string suffix_of(const std::string& sample_name) {
    static const std::map<std::string, std::vector<std::string>> kSuffixes = {
        {"counter", {"_total", "_created"}},
        {"histogram", {"_bucket", "_count", "_sum", "_created"}},
        {"gaugehistogram", {"_bucket", "_gcount", "_gsum"}},
        {"summary", {"_count", "_sum", "_created"}},
        {"info", {"_info"}},
        {"gauge", {""}},
        {"stateset", {""}},
        {"unknown", {""}}};
    for (const std::string& suffix : kSuffixes.at(family_.type)) {
      if (sample_name == family_.name + suffix) return suffix;
    }
    fail("sample " + sample_name + " is not of family " + family_.name + " (" + family_.type + ")");
    return "?";
  }

  void sample(std::string_view line) {
    std::string_view rest = line;
    std::string name = take_name(rest);
    if (name.empty()) return fail("sample without a metric name");
    if (family_.name.empty() || !name.starts_with(family_.name)) {
      family_named(name);  // samples without metadata: an unknown family
    }
    family_.has_samples = true;
    std::string suffix = suffix_of(name);
    std::vector<std::pair<std::string, std::string>> labels;
    if (!rest.empty() && rest[0] == '{') {
      auto parsed = take_labels(rest);
      if (!parsed) return;
      labels = std::move(*parsed);
    }
    if (rest.empty() || rest[0] != ' ') return fail("no space before the value");
    rest.remove_prefix(1);
    auto value = parse_number(take_token(rest));
    if (!value) return;
    // Optional timestamp, then optional exemplar.
    if (rest.starts_with(" ") && !rest.starts_with(" #")) {
      rest.remove_prefix(1);
      if (!parse_number(take_token(rest))) return;
    }
    std::string series = name + "{";
    std::optional<double> le;
    std::string without_le = name.substr(0, name.size() - suffix.size()) + "{";
    for (const auto& [label, label_value] : labels) {
      series += label + "=" + label_value + ",";
      if (label == "le") {
        le = parse_number(label_value);
        if (!le) return;
      } else {
        without_le += label + "=" + label_value + ",";
      }
    }
    if (!series_.insert(series).second) fail("series " + series + "} twice");
    if ((family_.type == "counter" || family_.type == "histogram") && *value < 0) {
      fail("negative " + family_.type + " value");
    }
    if (suffix == "_bucket") {
      if (!le) return fail("bucket without le");
      HistogramSeries& h = histograms_[without_le];
      if (*le <= h.last_le) fail("le not increasing in " + without_le + "}");
      if (*value < h.last_count) fail("bucket counts not cumulative in " + without_le + "}");
      if (std::isinf(*le)) {
        h.has_inf = true;
        h.inf_count = *value;
      }
      if (!rest.empty()) exemplar(rest, h.last_le, *le);
      h.last_le = *le;
      h.last_count = *value;
      return;
    }
    if (suffix == "_count" && family_.type == "histogram") histograms_[without_le].count = *value;
    if (!rest.empty()) {
      if (suffix != "_total") fail("exemplar on a " + name + " sample");
      exemplar(rest, -INFINITY, INFINITY);
    }
  }

  // " # {labels} value [timestamp]", for a bucket (above, up_to].
  void exemplar(std::string_view rest, double above, double up_to) {
    if (!rest.starts_with(" # {"))
      return fail("junk after the value: \"" + std::string(rest) + "\"");
    rest.remove_prefix(3);
    auto labels = take_labels(rest);
    if (!labels) return;
    size_t code_points = 0;
    for (const auto& [name, value] : *labels) {
      for (char c : name + value) code_points += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }
    if (code_points > 128) {
      fail("exemplar labels of " + std::to_string(code_points) + " code points (over 128)");
    }
    if (rest.empty() || rest[0] != ' ') return fail("exemplar without a value");
    rest.remove_prefix(1);
    auto value = parse_number(take_token(rest));
    if (!value) return;
    if (!(*value > above && *value <= up_to)) fail("exemplar value outside its bucket");
    if (!rest.empty()) {
      if (rest[0] != ' ') return fail("junk after the exemplar value");
      rest.remove_prefix(1);
      if (!parse_number(take_token(rest))) return;
      if (!rest.empty()) fail("junk after the exemplar timestamp");
    }
  }

  std::vector<std::string> errors_;
  size_t line_ = 0;
  Family family_;
  std::set<std::string> seen_families_;
  std::set<std::string> series_;
  std::map<std::string, HistogramSeries> histograms_;
};

inline std::vector<std::string> check_openmetrics(std::string_view text) {
  return OpenMetricsChecker().check(text);
}

}  // namespace funclatency::testing
