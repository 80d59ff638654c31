// Symbol lookup over ELF files: locates the binary, reads its symbols (and
// those of its separate debug file), matches the function part, and places
// each probe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "symbols/probe_site.h"
#include "symbols/search_paths.h"

namespace funclatency {

// A matched function that cannot be probed, and why. For -v and -l.
struct RefusedFunction {
  std::string binary;
  std::string symbol;      // demangled
  std::string raw_symbol;  // as in the symbol table
  uint64_t address = 0;
  uint64_t size = 0;
  std::string reason;  // "has size 0", "is outside executable code", ...
};

struct Resolution {
  std::string binary;                    // the file's path as the traced process knows it
  std::string attach_path;               // the path probes attach to (ProbeSite::attach_path)
  std::string symbol_file;               // where the symbols came from: the file or its debug file
  std::vector<ProbeSite> sites;          // ordered by address
  std::vector<RefusedFunction> refused;  // matched by a pattern but skipped
};

// One line of `-l` output.
struct ListedFunction {
  std::string symbol;      // demangled
  std::string raw_symbol;  // as in the symbol table
  std::string binary;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
  std::string refused_reason;     // empty when it can be probed
  std::optional<ProbeSite> site;  // when it can be probed: for the planner's placement
};

class ElfSymbolResolver {
 public:
  explicit ElfSymbolResolver(SearchPaths paths = {});
  ~ElfSymbolResolver();

  // Every function `spec` names, aliases at one address folded into one. A
  // spec that matches nothing is a kBadInput error with close names in
  // Error::hint.
  Result<std::vector<ProbeSite>> resolve(const TargetSpec& spec, const ResolveOptions& options);
  // resolve(), with the binary and what was skipped.
  Result<Resolution> resolve_detailed(const TargetSpec& spec, const ResolveOptions& options);
  // Matches spec.function in the file at `path`, already located (e.g. a
  // library the traced process mapped later). spec.binary is ignored. With
  // options.pid, a path into the process's namespace ("/proc/PID/root/...")
  // is reported as the process knows it (ProbeSite::binary) and attached
  // through as it is (ProbeSite::attach_path).
  Result<Resolution> resolve_in_file(const std::string& path, const TargetSpec& spec,
                                     const ResolveOptions& options);

  // The functions of one file; defined in the .cpp.
  struct SymbolTable;

 private:
  Result<std::shared_ptr<const SymbolTable>> symbols_of(const std::string& path);

  SearchPaths paths_;
  // Parsed files by path: several targets often name one binary.
  std::map<std::string, std::shared_ptr<const SymbolTable>> tables_;
};

// Every function the targets match, probeable or not (with the reason), for
// -l. No limit on the number of matches applies.
Result<std::vector<ListedFunction>> list_functions(ElfSymbolResolver& resolver,
                                                   std::span<const TargetSpec> specs,
                                                   const ResolveOptions& options);

}  // namespace funclatency
