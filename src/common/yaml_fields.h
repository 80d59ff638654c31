// Reading a YAML document into our own types with yaml-cpp, field by field:
// unknown keys, wrong types and missing values become one message with the
// line they are on. Used by every configuration file we read (--config,
// --web-config), so each says its errors the same way.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace funclatency::yaml {

// What a decoding step failed on; the caller turns it into one kBadInput line.
struct Invalid {
  std::string message;
};

// Missing (a zombie node for an absent key) or an explicit null: not set.
inline bool absent(const YAML::Node& node) {
  return !node.IsDefined() || node.IsNull();
}

inline std::string at_line(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? std::string() : " (line " + std::to_string(mark.line + 1) + ")";
}

[[noreturn]] inline void fail(const YAML::Node& node, std::string message) {
  throw Invalid{std::move(message) + at_line(node)};
}

// A mapping whose keys must all be among `known`.
inline void check_fields(const YAML::Node& node, std::string_view where,
                         std::initializer_list<std::string_view> known) {
  if (!node.IsMap()) fail(node, std::string(where) + " must be a mapping");
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (auto field : known) list += (list.empty() ? "" : ", ") + std::string(field);
      fail(entry.first,
           "unknown field \"" + key + "\" in " + std::string(where) + " (known: " + list + ")");
    }
  }
}

inline std::string scalar(const YAML::Node& node, std::string_view field) {
  if (absent(node)) return {};
  if (!node.IsScalar()) fail(node, std::string(field) + " must be a string");
  return node.Scalar();
}

inline bool boolean(const YAML::Node& node, std::string_view field) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    fail(node, std::string(field) + " must be true or false");
  }
  return value;
}

inline std::vector<std::string> strings(const YAML::Node& node, std::string_view field) {
  if (absent(node)) return {};
  if (!node.IsSequence()) fail(node, std::string(field) + " must be a list of strings");
  std::vector<std::string> values;
  for (const auto& item : node) values.push_back(scalar(item, field));
  return values;
}

}  // namespace funclatency::yaml
