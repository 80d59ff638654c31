// libFuzzer target for the TARGET parser and the FUNCTION pattern matcher.
//
// Input: byte 0 chooses regex (bit 0); the rest up to the first '\n' is the
// TARGET argument; what follows is a symbol name to match. Any input gives a
// TargetSpec or a kBadInput error, a matcher or a kBadInput error, and the
// properties below hold; AddressSanitizer and UBSan watch every access.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "symbols/name_matcher.h"
#include "symbols/target_spec.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

bool has_pattern_syntax(std::string_view text) {
  return text.find_first_of("*?^$[]().+|\\{}") != std::string_view::npos;
}

// glibc's regcomp takes time and memory exponential in the number of stacked
// duplication operators ("a++++++++++++++++++++" takes 15 s; five more, all
// memory). Known and reported against the tool (a -r pattern is user input);
// the fuzzer keeps regexes below that so it looks for other faults.
constexpr size_t kMaxDuplicationOperators = 6;

bool regex_too_costly(std::string_view pattern) {
  size_t operators = 0;
  for (char c : pattern) operators += c == '*' || c == '+' || c == '?' || c == '{';
  return operators > kMaxDuplicationOperators;
}

void check_matcher(const std::string& function, bool regex, std::string_view symbol) {
  if (regex && regex_too_costly(function)) return;
  auto matcher = funclatency::NameMatcher::create(function, regex);
  if (!matcher) {
    require(regex && matcher.error().kind == funclatency::ErrorKind::kBadInput);
    return;
  }
  require(matcher->text() == function);
  require(matcher->describe().find(function) != std::string::npos);
  const bool glob = function.find_first_of("*?") != std::string::npos;
  require(matcher->is_exact() == (!regex && !glob));
  const funclatency::SymbolNames names{symbol, symbol, symbol};
  const bool matched = matcher->matches(names);
  if (matcher->is_exact()) {
    require(matched == (symbol == function));
    require(matcher->matches({function, function, function}));
  }
  // A name without NUL bytes always matches itself as an exact name or a
  // glob without special characters, whatever the other views say.
  if (!regex && !has_pattern_syntax(function) && function.find('\0') == std::string::npos) {
    require(matcher->matches({"", "", function}));
  }
}

void check_close_names(const std::string& function, std::string_view symbol) {
  const std::vector<std::string> candidates{std::string(symbol), function, "", "main"};
  auto names = funclatency::close_names(function, candidates, 3);
  require(names.size() <= 3);
  for (const auto& name : names) require(!name.empty());
  if (!function.empty() && !has_pattern_syntax(function)) {
    require(!names.empty() && names.front() == function);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool regex = (data[0] & 1) != 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t newline = rest.find('\n');
  const std::string_view argument = rest.substr(0, newline);
  const std::string_view symbol =
      newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);

  auto spec = funclatency::parse_target(argument, regex);
  if (!spec) {
    require(spec.error().kind == funclatency::ErrorKind::kBadInput);
    require(!spec.error().message().empty());
    return 0;
  }
  // The argument splits at one colon into the two parts, losing nothing.
  require(spec->binary + ":" + spec->function == argument);
  require(!spec->function.empty());
  require(spec->regex == regex);
  // The separator is the first colon of the last odd run of colons, so every
  // run of colons left in the function part is a whole number of "::" pairs.
  size_t run = 0;
  for (char c : spec->function + '.') {
    if (c == ':') {
      run++;
      continue;
    }
    require(run % 2 == 0);
    run = 0;
  }
  check_matcher(spec->function, regex, symbol);
  check_close_names(spec->function, symbol);
  return 0;
}
