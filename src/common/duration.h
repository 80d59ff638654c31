// A duration written with its unit ("10ms", "250us", "1.5s", "800ns"), as
// the command line (--slower-than) and the agent's --config file (interval,
// slower_than) take it: one parser below both, so they cannot disagree.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.h"

namespace funclatency {

// Nanoseconds, rounded; kBadInput for a missing number or unit, an unknown
// unit, or a value past 1e18 ns.
inline Result<uint64_t> parse_duration_ns(std::string_view text) {
  auto fail = [&text] {
    return bad_input("\"" + std::string(text) + "\" is not a duration",
                     "write a number and a unit: 800ns, 250us, 10ms, 1.5s");
  };
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    digits++;
  }
  const std::string number(text.substr(0, digits));
  const std::string_view unit = text.substr(digits);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
    return fail();
  }
  double scale = 0;
  if (unit == "ns") scale = 1;
  if (unit == "us") scale = 1e3;
  if (unit == "ms") scale = 1e6;
  if (unit == "s") scale = 1e9;
  if (scale == 0) return fail();
  const double ns = std::strtod(number.c_str(), nullptr) * scale;
  if (!(ns < 1e18)) return fail();
  return static_cast<uint64_t>(ns + 0.5);
}

}  // namespace funclatency
