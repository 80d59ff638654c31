#include "symbols/name_matcher.h"

#include <fnmatch.h>
#include <regex.h>

#include <algorithm>
#include <set>

#include "common/non_copyable.h"

namespace funclatency {

struct NameMatcher::CompiledRegex : NonCopyable {
  regex_t compiled;
  bool valid = false;  // regcomp succeeded: there is something to free
  CompiledRegex() = default;
  ~CompiledRegex() {
    if (valid) regfree(&compiled);
  }
};

Result<NameMatcher> NameMatcher::create(const std::string& function, bool regex) {
  NameMatcher matcher;
  matcher.text_ = function;
  if (regex) {
    matcher.kind_ = Kind::kRegex;
    // glibc's regcomp takes exponential time and memory on stacked
    // repetition operators ("a++++"), which POSIX leaves undefined anyway.
    for (size_t i = 1; i < function.size(); i++) {
      auto repeats = [](char c) { return c == '*' || c == '+' || c == '?' || c == '}'; };
      bool escaped = function[i - 1] == '\\' || (i >= 2 && function[i - 2] == '\\');
      if (repeats(function[i]) && repeats(function[i - 1]) && function[i] != '}' && !escaped) {
        return bad_input("regex \"" + function + "\" repeats a repetition (\"" +
                             function.substr(i - 1, 2) + "\")",
                         "write one operator, e.g. \"a+\" instead of \"a++\"");
      }
    }
    auto compiled = std::make_shared<CompiledRegex>();
    const int status = regcomp(&compiled->compiled, function.c_str(), REG_EXTENDED | REG_NOSUB);
    if (status != 0) {
      char reason[256];
      regerror(status, &compiled->compiled, reason, sizeof reason);
      return bad_input("regex \"" + function + "\" does not compile: " + reason,
                       "write a POSIX extended regular expression");
    }
    compiled->valid = true;
    matcher.regex_ = std::move(compiled);
  } else if (function.find_first_of("*?") != std::string::npos) {
    matcher.kind_ = Kind::kGlob;
  }
  return matcher;
}

bool NameMatcher::matches_one(std::string_view name) const {
  const std::string text(name);
  switch (kind_) {
    case Kind::kExact:
      return name == text_;
    case Kind::kGlob:
      return fnmatch(text_.c_str(), text.c_str(), 0) == 0;
    case Kind::kRegex:
      return regexec(&regex_->compiled, text.c_str(), 0, nullptr, 0) == 0;
  }
  return false;
}

bool NameMatcher::matches(const SymbolNames& names) const {
  if (matches_one(names.raw)) return true;
  if (names.demangled != names.raw && matches_one(names.demangled)) return true;
  if (names.unqualified != names.demangled && matches_one(names.unqualified)) return true;
  return !names.distinct.empty() && matches_one(names.distinct);
}

std::string NameMatcher::describe_no_match() const {
  if (kind_ == Kind::kExact) return "no " + describe();
  return "no function matches " + describe();
}

std::string NameMatcher::describe() const {
  switch (kind_) {
    case Kind::kExact:
      return "function \"" + text_ + "\"";
    case Kind::kGlob:
      return "pattern \"" + text_ + "\"";
    case Kind::kRegex:
      return "regex \"" + text_ + "\"";
  }
  return text_;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// True when the two names have a pair of adjacent characters in common: a
// cheap guard against edit-distance matches that share nothing.
bool share_a_pair(std::string_view a, std::string_view b) {
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    if (b.find(a.substr(i, 2)) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> close_names(std::string_view wanted,
                                     const std::vector<std::string>& candidates, size_t limit) {
  // Wildcards and regex syntax say nothing about the name itself.
  std::string literal;
  for (char c : wanted) {
    if (std::string_view("*?^$[]().+|\\{}").find(c) == std::string_view::npos) literal += c;
  }
  if (literal.empty()) return {};
  // Generous: ranking keeps the closest, and a near-miss list beats none.
  const size_t allowed = std::max<size_t>(2, literal.size() * 2 / 3);
  std::set<std::pair<size_t, std::string>> ranked;
  for (const auto& candidate : candidates) {
    if (candidate.empty()) continue;
    size_t distance = edit_distance(literal, candidate);
    const bool contains = literal.size() >= 3 && (candidate.find(literal) != std::string::npos ||
                                                  literal.find(candidate) != std::string::npos);
    const bool near = distance <= 2 || (distance <= allowed && share_a_pair(literal, candidate));
    if (!near && !contains) continue;
    // Containment ranks with the nearest misses.
    if (contains) distance = std::min<size_t>(distance, 1);
    ranked.emplace(distance, candidate);
  }
  std::vector<std::string> names;
  for (const auto& [distance, name] : ranked) {
    if (names.size() == limit) break;
    names.push_back(name);
  }
  return names;
}

}  // namespace funclatency
