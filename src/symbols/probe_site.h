// What symbol lookup produces and the probe layer consumes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace funclatency {

// A TARGET argument, parsed: "BINARY:FUNCTION", "lib:FUNCTION", ":FUNCTION".
struct TargetSpec {
  std::string binary;    // path, program name, library name, or empty (":FUNCTION" with -p)
  std::string function;  // a name or a glob pattern (or a regex when `regex`)
  bool regex = false;
};

// One function to probe.
struct ProbeSite {
  std::string binary;       // absolute path of the ELF file that holds the code
  std::string symbol;       // the name users read (demangled for C++)
  std::string raw_symbol;   // the name in the symbol table (mangled)
  uint64_t address = 0;     // st_value
  uint64_t size = 0;        // st_size
  uint64_t file_offset = 0; // file offset of st_value, what uprobes attach at
  uint32_t entry_skip = 0;  // bytes after the start the probes sit at (4 after endbr64)
};

struct ResolveOptions {
  std::optional<int> pid;  // resolve names through this process's mappings
  size_t max_matches = 5000;
};

// Symbol lookup behind an interface so tests can substitute it.
class SymbolResolver {
 public:
  virtual ~SymbolResolver() = default;
  // Every function `spec` names, aliases at one address folded into one.
  // A spec that matches nothing is a kBadInput error with close names in
  // Error::hint.
  virtual Result<std::vector<ProbeSite>> resolve(const TargetSpec& spec,
                                                 const ResolveOptions& options) = 0;
};

}  // namespace funclatency
