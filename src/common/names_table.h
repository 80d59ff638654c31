// Why: an enum (or a code) becomes text only at the edges: messages, JSON,
// OTLP, HTTP. Each one's words are one table of (value, text) pairs that
// both directions read, so the words are written once; a table of an
// enum's words is checked at compile time to hold every value, in order.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace funclatency {

template <typename Key>
using NamedValue = std::pair<Key, std::string_view>;

// Whether `table` gives each value of an enum from 0 to `last` its words,
// in the enum's order: for a static_assert beside the table.
template <typename Enum, size_t N>
constexpr bool names_every_value(const NamedValue<Enum> (&table)[N], Enum last) {
  if (N != static_cast<size_t>(last) + 1) return false;
  for (size_t i = 0; i < N; i++) {
    if (static_cast<size_t>(table[i].first) != i) return false;
  }
  return true;
}

// The words `table` gives `key`, or `otherwise` where it gives none.
template <typename Key, size_t N>
constexpr std::string_view name_in(const NamedValue<Key> (&table)[N], Key key,
                                   std::string_view otherwise = {}) {
  for (const auto& [value, name] : table) {
    if (value == key) return name;
  }
  return otherwise;
}

// The value `table` names `name`, if any.
template <typename Key, size_t N>
constexpr std::optional<Key> value_in(const NamedValue<Key> (&table)[N], std::string_view name) {
  for (const auto& [value, words] : table) {
    if (words == name) return value;
  }
  return std::nullopt;
}

}  // namespace funclatency
