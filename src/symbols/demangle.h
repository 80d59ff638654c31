// C++ and Rust names as users write them.
#pragma once

#include <string>
#include <string_view>

namespace funclatency {

// The demangled form of a mangled C++ name ("_ZN2ns5Class6methodEi" ->
// "ns::Class::method(int)") or Rust name (legacy "_ZN1m7handler7process17h...E"
// -> "m::handler::process", without the hash; v0 "_RINv...7genericyE..." ->
// "m::handler::generic::<u64>"); any other name is returned unchanged.
std::string demangle(std::string_view name);

// The names a symbol is matched by and shown as.
struct DemangledNames {
  std::string readable;  // demangle(): "ns::f(int)", "m::handler::generic::<u64>"
  // Without parameters or generic arguments: "ns::f", "m::handler::generic".
  std::string unqualified;
  // What tells apart functions whose readable names are equal, when the symbol
  // carries it: a legacy Rust name with its hash
  // ("m::handler::generic::h3c351a77d29bfd48", two instantiations of one
  // generic); empty otherwise.
  std::string distinct;
};
DemangledNames demangled_names(std::string_view name);
// demangled_names(name).distinct alone, without the C++ demangler's work.
std::string distinct_name(std::string_view name);

// A demangled name without its parameter list, qualifiers, return type and
// clone suffix: "void ns::f<int>(int) const [clone .isra.0]" -> "ns::f<int>".
// Names that are not C++ functions are returned unchanged.
std::string without_parameters(std::string_view demangled);

}  // namespace funclatency
