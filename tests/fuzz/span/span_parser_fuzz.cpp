// libFuzzer target for the span parser (--span), user input like a TARGET.
//
// Input: the --span argument. Any input gives a SpanSpec or a kBadInput
// error with a message; a SpanSpec holds the properties below (the grammar
// of cli/span_option.h); AddressSanitizer and UBSan watch every access.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/span_option.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check_point(const funclatency::SpanPoint& point) {
  using funclatency::SpanValue;
  require(!point.function.empty());
  require(point.function.find_first_of("*?[") == std::string::npos);
  require(point.arg_index <= 5);
  if (point.value == SpanValue::kReturnValue) require(point.at_return);
  if (point.value == SpanValue::kArgument) require(!point.at_return);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto span = funclatency::parse_span(text);
  if (!span) {
    require(span.error().kind == funclatency::ErrorKind::kBadInput);
    require(span.error().message().find("--span") != std::string::npos);
    return 0;
  }
  require(!span->name.empty());
  require(span->text == text);
  check_point(span->start);
  check_point(span->end);
  // Matched by a value at both ends or at neither.
  require((span->start.value == funclatency::SpanValue::kNone) ==
          (span->end.value == funclatency::SpanValue::kNone));
  require(!span->any_process || span->by_value());
  return 0;
}
