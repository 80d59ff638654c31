#include "collect/value_series.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

#include "common/names_table.h"

namespace funclatency {

namespace {

// The rules' words in --by retval:RULE and argN:BUCKETS (go-error[:W],
// which takes a number, is parsed apart).
constexpr NamedValue<uint32_t> kRetvalRuleNames[] = {
    {FL_RULE_ZERO, "zero"}, {FL_RULE_ERRNO, "errno"}, {FL_RULE_NULL, "null"},
    {FL_RULE_BOOL, "bool"}, {FL_RULE_RAW32, "raw"},   {FL_RULE_RAW64, "raw64"}};
constexpr NamedValue<uint32_t> kArgRuleNames[] = {
    {FL_RULE_LOG2, "log2"}, {FL_RULE_RAW64, "raw"}, {FL_RULE_RAW32, "raw32"}};

Result<ValueSeries> refuse(std::string_view key, std::string_view hint) {
  return bad_input(fmt::format("--by {}: not a value to split by", key), std::string(hint));
}

std::optional<uint32_t> small_number(std::string_view text) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return n;
}

Result<ValueSeries> parse_retval(std::string_view key, std::string_view rule) {
  ValueSeries spec{.source = FL_VALUE_RETVAL};
  const std::string hint = fmt::format("retval:RULE, RULE one of {}", kRetvalRules);
  if (auto named = value_in(kRetvalRuleNames, rule.empty() ? "zero" : rule)) {
    spec.rule = *named;
  } else if (rule == "go-error" || rule.starts_with("go-error:")) {
    spec.rule = FL_RULE_GO_ERROR;
    if (rule != "go-error") {
      auto word = small_number(rule.substr(std::strlen("go-error:")));
      if (!word || *word > kMaxArgIndex) {
        return bad_input(
            fmt::format("--by {}: the error's result word is 0 to {}", key, kMaxArgIndex),
            "count the words of the results before the error: an int, a pointer "
            "1, a string 2, a slice 3 (go-error:1 for (int, error))");
      }
      spec.index = *word;
    }
  } else {
    return refuse(key, hint);
  }
  return spec;
}

}  // namespace

bool is_value_key(std::string_view key) {
  return key == "retval" || key.starts_with("retval:") || key.starts_with("arg");
}

Result<ValueSeries> parse_value_key(std::string_view key) {
  const size_t colon = key.find(':');
  const std::string_view head = key.substr(0, colon);
  const std::string_view rule = colon == std::string_view::npos ? "" : key.substr(colon + 1);
  if (colon != std::string_view::npos && rule.empty()) {
    return refuse(key, "write the rule after the colon, or leave both out for the default");
  }
  if (head == "retval") return parse_retval(key, rule);
  if (!head.starts_with("arg")) {
    return refuse(key, "write retval[:RULE] or argN[:BUCKETS]");
  }
  auto index = small_number(head.substr(3));
  if (!index || *index > kMaxArgIndex) {
    return bad_input(
        fmt::format("--by {}: N of argN is 0 (the first argument) to {}", key, kMaxArgIndex),
        "C functions have 6 integer argument registers (arg0-arg5), Go 9 "
        "(arg0-arg8)");
  }
  ValueSeries spec{.source = FL_VALUE_ARG, .index = *index};
  auto named = value_in(kArgRuleNames, rule.empty() ? "log2" : rule);
  if (!named) return refuse(key, fmt::format("argN:BUCKETS, BUCKETS one of {}", kArgBuckets));
  spec.rule = *named;
  return spec;
}

std::string_view value_label_name(const ValueSeries& spec) {
  return spec.source == FL_VALUE_ARG ? "arg" : "retval";
}

std::string value_label(const ValueSeries& spec, uint64_t value) {
  const auto as_signed = static_cast<int64_t>(value);
  switch (spec.rule) {
    case FL_RULE_ZERO:
    case FL_RULE_GO_ERROR:
      return value ? "error" : "ok";
    case FL_RULE_ERRNO: {
      if (as_signed >= 0) return "ok";
      const char* name =
          as_signed >= -4095 ? strerrorname_np(static_cast<int>(-as_signed)) : nullptr;
      return name ? fmt::format("-{}", name) : std::to_string(as_signed);
    }
    case FL_RULE_NULL:
      return value ? "ok" : "null";
    case FL_RULE_BOOL:
      return value ? "true" : "false";
    case FL_RULE_LOG2: {
      if (value == 0) return "[0, 1)";
      // Class b holds [2^(b-1), 2^b); 2^64 is written out.
      const uint64_t low = uint64_t{1} << (value - 1);
      return value >= 64 ? fmt::format("[{}, 18446744073709551616)", low)
                         : fmt::format("[{}, {})", low, low << 1);
    }
    default:
      return std::to_string(as_signed);
  }
}

}  // namespace funclatency
