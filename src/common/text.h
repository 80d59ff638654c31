// Small text helpers more than one parser needs (HTTP heads, the OTLP
// environment, Accept headers), written once so they cannot disagree on what
// white space is.
#pragma once

#include <string_view>

namespace funclatency {

// RFC 9110's optional white space (OWS): space and horizontal tab.
inline constexpr std::string_view kOptionalWhitespace = " \t";
// What std::isspace takes for white space in the C locale.
inline constexpr std::string_view kAsciiWhitespace = " \t\n\v\f\r";

// `text` without leading and trailing characters of `blanks`.
constexpr std::string_view trim(std::string_view text,
                                std::string_view blanks = kOptionalWhitespace) {
  size_t first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

}  // namespace funclatency
