#include "symbols/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "symbols/rust_demangle.h"

namespace funclatency {
namespace {

constexpr std::string_view kCloneMarker = " [clone ";
constexpr std::string_view kOperator = "operator";

std::string_view strip_trailing_qualifiers(std::string_view name) {
  static constexpr std::string_view kQualifiers[] = {" const", " volatile", " &&", " &",
                                                     " noexcept"};
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view qualifier : kQualifiers) {
      if (name.ends_with(qualifier)) {
        name.remove_suffix(qualifier.size());
        stripped = true;
      }
    }
  }
  return name;
}

// Index of the '(' that opens the final parenthesised group, or npos.
size_t opening_of_last_group(std::string_view name) {
  if (!name.ends_with(')')) return std::string_view::npos;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// Start of the qualified name after a return type ("void ns::f<int>"): past
// the last space outside <> and (), unless that space follows "operator".
size_t start_after_return_type(std::string_view name) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if ((c == '>' || c == ')') && depth > 0) --depth;
    if (c == ' ' && depth == 0 && !name.substr(0, i).ends_with(kOperator)) start = i + 1;
  }
  return start;
}

// The C++ demangler's reading of `name`, or `name` itself.
std::string demangle_cxx(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return mangled;
  return demangled.get();
}

}  // namespace

std::string demangle(std::string_view name) {
  if (auto rust = demangle_rust(name)) return std::move(rust->path);
  return demangle_cxx(name);
}

DemangledNames demangled_names(std::string_view name) {
  if (auto rust = demangle_rust(name)) {
    return {std::move(rust->path), std::move(rust->unqualified), std::move(rust->with_hash)};
  }
  std::string readable = demangle_cxx(name);
  std::string unqualified = readable == name ? readable : without_parameters(readable);
  return {std::move(readable), std::move(unqualified), {}};
}

std::string distinct_name(std::string_view name) {
  auto rust = demangle_rust(name);
  return rust ? std::move(rust->with_hash) : std::string();
}

std::string without_parameters(std::string_view demangled) {
  std::string_view name = demangled;
  if (const size_t clone = name.find(kCloneMarker); clone != std::string_view::npos) {
    name = name.substr(0, clone);
  }
  name = strip_trailing_qualifiers(name);
  const size_t parameters = opening_of_last_group(name);
  if (parameters == std::string_view::npos || parameters == 0) return std::string(name);
  name = name.substr(0, parameters);
  return std::string(name.substr(start_after_return_type(name)));
}

}  // namespace funclatency
