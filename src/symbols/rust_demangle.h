// Rust symbol names as Rust paths: rustc mangles in two schemes, neither of
// which the C++ demangler reads as a Rust user writes it. Legacy names
// ("_ZN1m7handler7process17h6e91de04879f2b8eE") look Itanium-mangled but end
// in a hash that changes with every build and hide the generic arguments; v0
// names ("_RINvNtCs..._1m7handler7genericyEB4_", RFC 2603) carry the generic
// arguments and are not Itanium at all. Symbol names are untrusted input:
// malformed ones give std::nullopt, never a crash, and the work per name is
// bounded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace funclatency {

struct RustName {
  // The path users read: "m::handler::process", "m::handler::generic::<u64>",
  // "<m::handler::S as m::handler::Tr>::method", "m::main::{closure#0}".
  // Crate disambiguators are left out, as `rustc-demangle`'s "{:#}" does.
  std::string path;
  // `path` without the generic arguments of its last segment:
  // "m::handler::generic" for both "generic::<u64>" and "generic::<&str>".
  std::string unqualified;
  // Legacy names only: `path` with the hash segment,
  // "m::handler::process::h6e91de04879f2b8e"; empty for v0.
  std::string with_hash;
};

// The Rust name of a legacy or v0 symbol; std::nullopt for any other name
// (C, C++) and for a Rust-looking name that does not parse. A suffix after
// the mangled name is kept (".cold", ".0"), less any ".llvm.<digits>" in it.
std::optional<RustName> demangle_rust(std::string_view symbol);

}  // namespace funclatency
