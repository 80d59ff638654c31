// --by retval[:RULE] and --by argN[:BUCKETS]: series by a value of the call
// itself. The probes classify the value (fl_value_of, one rule per run, in
// read-only config); this is the spelling of the rules on the command line
// and the label each class gets in every output. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bpf/funclatency.h"
#include "common/error.h"

namespace funclatency {

struct ValueSeries {
  uint32_t source = FL_VALUE_NONE;  // enum fl_value_source
  // argN: N (0-based); retval: the Go result word read (0: RAX); C reads RAX.
  uint32_t index = 0;
  uint32_t rule = FL_RULE_ZERO;  // enum fl_value_rule
  bool any() const { return source != FL_VALUE_NONE; }
  auto operator<=>(const ValueSeries&) const = default;
};

// Integer argument registers: 6 in C (System V), 9 in Go's internal ABI.
inline constexpr uint32_t kMaxArgIndex = 8;
// The --by rules, as --help and refusals teach them.
inline constexpr std::string_view kRetvalRules =
    "zero (default: 0 ok, else error), errno (>= 0 ok, < 0 the errno: -EAGAIN), null (NULL "
    "null, else ok), bool (true/false), raw (the int), raw64 (the whole register), go-error[:W] "
    "(Go: error nil ok, else error; W = result word of the error, 0 when it is the only result)";
inline constexpr std::string_view kArgBuckets =
    "log2 (default: [2^k, 2^(k+1)) ranges), raw (the 64-bit value), raw32 (an int)";

// Whether a --by key names a value ("retval...", "argN...") rather than who
// made the call.
bool is_value_key(std::string_view key);
// Parses "retval", "retval:errno", "retval:go-error:1", "arg0", "arg2:raw".
Result<ValueSeries> parse_value_key(std::string_view key);
// The label's name in outputs: "retval" or "arg".
std::string_view value_label_name(const ValueSeries& spec);
// The label of a class: "ok", "error", "-EAGAIN", "null", "true", "42",
// "[64, 128)".
std::string value_label(const ValueSeries& spec, uint64_t value);

}  // namespace funclatency
