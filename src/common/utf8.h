// Label and attribute values come from symbol tables and file paths, which
// may hold any bytes; Prometheus and OTLP (proto3 strings) need UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace funclatency {

// Length of the well-formed UTF-8 sequence starting at text[0], or 0 when it
// is not one (overlong forms, surrogates and code points above U+10FFFF are not).
inline size_t utf8_sequence_length(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || text.size() < length) return 0;
  for (size_t i = 1; i < length; i++) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  unsigned char second = byte(1);
  if (lead == 0xE0 && second < 0xA0) return 0;  // overlong
  if (lead == 0xED && second > 0x9F) return 0;  // surrogate
  if (lead == 0xF0 && second < 0x90) return 0;  // overlong
  if (lead == 0xF4 && second > 0x8F) return 0;  // above U+10FFFF
  return length;
}

// `text` with every byte that does not start a well-formed sequence replaced
// by U+FFFD.
inline std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t length = utf8_sequence_length(text);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      text.remove_prefix(1);
    } else {
      out.append(text.substr(0, length));
      text.remove_prefix(length);
    }
  }
  return out;
}

// True when every byte of `text` belongs to a well-formed sequence.
inline bool is_valid_utf8(std::string_view text) {
  while (!text.empty()) {
    size_t length = utf8_sequence_length(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

// Makes `text` valid UTF-8 in place (to_valid_utf8); false when it already was.
inline bool make_valid_utf8(std::string& text) {
  if (is_valid_utf8(text)) return false;
  text = to_valid_utf8(text);
  return true;
}

}  // namespace funclatency
