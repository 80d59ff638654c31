// A span: a named latency from one probe point to another, each a
// function's entry or return, matched by the thread or by a value (the
// start's return value or argument N equals the end's argument M). What
// --span and --config's `spans` give the run; cli/span_option parses it.
#pragma once

#include <cstdint>
#include <string>

namespace funclatency {

// What a point contributes to the match.
enum class SpanValue {
  kNone,         // matched by the thread: entry or return
  kArgument,     // argument arg_index at the entry
  kReturnValue,  // the return value at the return
};

struct SpanPoint {
  std::string binary;    // as a TARGET's; the start's when the end names none
  std::string function;  // one function (no pattern)
  bool at_return = false;
  SpanValue value = SpanValue::kNone;
  uint32_t arg_index = 0;  // with kArgument: 0 is the first argument
};

struct SpanSpec {
  std::string name;  // the span's label in every output
  SpanPoint start;
  SpanPoint end;
  // Matched by value: a start in one process may end in another (the value
  // is an id both share, not a pointer).
  bool any_process = false;
  bool by_value() const { return start.value != SpanValue::kNone; }
  // As the user wrote it, for messages and -v.
  std::string text;
};

}  // namespace funclatency
