// libFuzzer target for the Rust demangler (symbols/rust_demangle): symbol
// names come from the traced program's files, so any bytes must give a name
// or std::nullopt, never a crash, a hang or an output without bound.
// AddressSanitizer and UBSan watch every access. Seeds (corpus/): real legacy
// and v0 names, and hand-written v0 names for the rarer productions.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "symbols/demangle.h"
#include "symbols/rust_demangle.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

// The demangler's own bound on a name's output, plus the suffix it keeps.
constexpr size_t kMaxOutput = 64 * 1024;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view symbol(reinterpret_cast<const char*>(data), size);
  const auto name = funclatency::demangle_rust(symbol);
  if (!name) {
    // An unreadable v0 name is shown as it is.
    if (symbol.starts_with("_R")) require(funclatency::demangle(symbol) == symbol);
    return 0;
  }
  require(symbol.starts_with("_R") || symbol.starts_with("_ZN"));
  require(name->path.size() <= kMaxOutput + size);
  require(name->unqualified.size() <= name->path.size());
  require(name->with_hash.empty() == symbol.starts_with("_R"));
  if (!name->with_hash.empty()) require(name->with_hash.size() == name->path.size() + 19);
  const funclatency::DemangledNames names = funclatency::demangled_names(symbol);
  require(names.readable == name->path);
  require(names.unqualified == name->unqualified);
  require(names.distinct == name->with_hash);
  return 0;
}
