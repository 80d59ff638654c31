// Why: see span_option.h. One grammar for the command line and the file.
#include "cli/span_option.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "common/text.h"
#include "symbols/target_spec.h"

namespace funclatency {

namespace {

constexpr const char* kSpanHint =
    "write NAME=[BINARY:]FUNCTION:POINT -> [BINARY:]FUNCTION:POINT, POINT one of entry, return, "
    "ret (its return value), argN (argument N, 0-5); e.g. "
    "'request=/usr/sbin/nginx:ngx_http_create_request:ret -> ngx_http_free_request:arg0'";

// The last ':' that is not half of a C++ "::".
size_t last_separator(std::string_view text) {
  for (size_t i = text.size(); i-- > 0;) {
    if (text[i] != ':') continue;
    const bool pair = (i > 0 && text[i - 1] == ':') || (i + 1 < text.size() && text[i + 1] == ':');
    if (!pair) return i;
    if (i > 0 && text[i - 1] == ':') i--;  // skip the "::"
  }
  return std::string_view::npos;
}

Result<SpanPoint> parse_point(std::string_view whole, std::string_view text, const char* which,
                              const std::string* start_binary) {
  auto fail = [&](const std::string& why) -> std::unexpected<Error> {
    return bad_input(fmt::format("--span \"{}\": {} {}", whole, which, why), kSpanHint);
  };
  const size_t colon = last_separator(text);
  if (colon == std::string_view::npos)
    return fail("point has no :POINT (entry, return, ret, argN)");
  const std::string_view point = text.substr(colon + 1);
  const std::string_view place = text.substr(0, colon);
  SpanPoint result;
  if (point == "entry") {
  } else if (point == "return") {
    result.at_return = true;
  } else if (point == "ret") {
    result.at_return = true;
    result.value = SpanValue::kReturnValue;
  } else if (point.size() == 4 && point.starts_with("arg") && point[3] >= '0' && point[3] <= '5') {
    result.value = SpanValue::kArgument;
    result.arg_index = static_cast<uint32_t>(point[3] - '0');
  } else {
    return fail(fmt::format("point \"{}\" is not entry, return, ret or arg0..arg5", point));
  }
  if (place.empty()) return fail("point names no function");
  if (last_separator(place) == std::string_view::npos) {
    if (!start_binary) return fail("point names no binary (BINARY:FUNCTION:POINT)");
    result.binary = *start_binary;
    result.function = std::string(place);
  } else {
    auto target = parse_target(place, false);
    if (!target) return fail(target.error().message());
    result.binary = target->binary;
    result.function = target->function;
  }
  if (result.function.find_first_of("*?[") != std::string::npos) {
    return fail(fmt::format("function \"{}\" is a pattern; a span's point is one function",
                            result.function));
  }
  return result;
}

}  // namespace

Result<SpanSpec> parse_span(std::string_view text) {
  SpanSpec span;
  span.text = std::string(text);
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return bad_input(fmt::format("--span \"{}\": no NAME= before the points", text), kSpanHint);
  }
  span.name = std::string(trim(text.substr(0, equals)));
  if (span.name.empty() || !std::all_of(span.name.begin(), span.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      })) {
    return bad_input(
        fmt::format("--span \"{}\": NAME \"{}\" is not letters, digits, _ - .", text, span.name),
        kSpanHint);
  }
  std::string_view rest = text.substr(equals + 1);
  const size_t arrow = rest.find("->");
  if (arrow == std::string_view::npos) {
    return bad_input(fmt::format("--span \"{}\": no \" -> \" between START and END", text),
                     kSpanHint);
  }
  std::string_view end_text = trim(rest.substr(arrow + 2));
  if (const size_t space = end_text.find_first_of(" \t"); space != std::string_view::npos) {
    const std::string_view option = trim(end_text.substr(space));
    if (option != "any-process") {
      return bad_input(
          fmt::format("--span \"{}\": \"{}\" after END is not an option", text, option),
          "the one option is any-process (a by-value span may end in another process)");
    }
    span.any_process = true;
    end_text = end_text.substr(0, space);
  }
  auto start = parse_point(text, trim(rest.substr(0, arrow)), "START", nullptr);
  if (!start) return std::unexpected(start.error());
  span.start = std::move(*start);
  auto end = parse_point(text, end_text, "END", &span.start.binary);
  if (!end) return std::unexpected(end.error());
  span.end = std::move(*end);
  if ((span.start.value == SpanValue::kNone) != (span.end.value == SpanValue::kNone)) {
    return bad_input(
        fmt::format("--span \"{}\": one point carries a value and the other none", text),
        "match by the thread (entry/return at both ends) or by a value (ret/argN at both)");
  }
  if (span.any_process && !span.by_value()) {
    return bad_input(fmt::format("--span \"{}\": any-process needs a by-value span", text),
                     "a span matched by the thread is within its process");
  }
  return span;
}

}  // namespace funclatency
