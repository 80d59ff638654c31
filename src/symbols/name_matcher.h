// Matching the FUNCTION part of a target against symbol names: an exact
// name, a glob (`*`, `?`), or a POSIX extended regex.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace funclatency {

// The names one symbol answers to.
struct SymbolNames {
  std::string_view raw;          // as in the symbol table ("_ZN2ns1fEi")
  std::string_view demangled;    // "ns::f(int)" (== raw for C)
  std::string_view unqualified;  // "ns::f": without parameters (== raw for C)
  // The demangled name with what tells it apart from others demangled alike
  // (a legacy Rust hash: "m::generic::h3c351a77d29bfd48"), or empty.
  std::string_view distinct = {};
};

class NameMatcher {
 public:
  // A function part with '*' or '?' is a glob; with `regex` it is an
  // extended regex searched anywhere in the name (anchor with ^...$). A regex
  // that does not compile is a kBadInput error.
  static Result<NameMatcher> create(const std::string& function, bool regex);

  // True for a plain name: it must match exactly, and a match that cannot be
  // probed is an error rather than skipped.
  bool is_exact() const { return kind_ == Kind::kExact; }
  bool matches(const SymbolNames& names) const;
  // "function \"slow_op\"", "pattern \"slow_*\"", "regex \"^slow\"".
  std::string describe() const;
  // "no function \"f\"", "no function matches pattern \"f*\"".
  std::string describe_no_match() const;
  const std::string& text() const { return text_; }

 private:
  enum class Kind { kExact, kGlob, kRegex };
  struct CompiledRegex;
  NameMatcher() = default;
  bool matches_one(std::string_view name) const;

  Kind kind_ = Kind::kExact;
  std::string text_;
  std::shared_ptr<const CompiledRegex> regex_;
};

// Up to `limit` names from `candidates` close to `wanted` (small edit
// distance, or one containing the other), closest first.
std::vector<std::string> close_names(std::string_view wanted,
                                     const std::vector<std::string>& candidates, size_t limit = 5);

}  // namespace funclatency
