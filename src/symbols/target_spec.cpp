#include "symbols/target_spec.h"

#include <optional>
#include <string>

namespace funclatency {
namespace {

// Position of the last ':' that separates binary and function. In a run of
// colons, pairs belong to C++ scopes ("::"); an odd run's first colon is the
// separator ("bin:::f" is binary "bin", function "::f").
std::optional<size_t> separator_position(std::string_view arg) {
  std::optional<size_t> found;
  size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] != ':') {
      ++i;
      continue;
    }
    size_t run_end = i;
    while (run_end < arg.size() && arg[run_end] == ':') ++run_end;
    if ((run_end - i) % 2 == 1) found = i;
    i = run_end;
  }
  return found;
}

}  // namespace

Result<TargetSpec> parse_target(std::string_view arg, bool regex) {
  const std::string shown(arg);
  const auto separator = separator_position(arg);
  if (!separator) {
    return bad_input("target \"" + shown + "\" has no ':' between binary and function",
                     "write BINARY:FUNCTION, LIBRARY:FUNCTION, or :FUNCTION with -p PID");
  }
  TargetSpec spec;
  spec.binary = std::string(arg.substr(0, *separator));
  spec.function = std::string(arg.substr(*separator + 1));
  spec.regex = regex;
  if (spec.function.empty()) {
    return bad_input(
        "target \"" + shown + "\" names no function",
        "write " + (spec.binary.empty() ? std::string("BINARY") : spec.binary) + ":FUNCTION");
  }
  return spec;
}

}  // namespace funclatency
