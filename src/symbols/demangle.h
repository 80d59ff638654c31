// C++ names as users write them.
#pragma once

#include <string>
#include <string_view>

namespace funclatency {

// The demangled form of a mangled C++ name ("_ZN2ns5Class6methodEi" ->
// "ns::Class::method(int)"); any other name is returned unchanged.
std::string demangle(std::string_view name);

// A demangled name without its parameter list, qualifiers, return type and
// clone suffix: "void ns::f<int>(int) const [clone .isra.0]" -> "ns::f<int>".
// Names that are not C++ functions are returned unchanged.
std::string without_parameters(std::string_view demangled);

}  // namespace funclatency
