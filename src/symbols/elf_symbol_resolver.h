// Symbol lookup over ELF files: locates the binary, reads its symbols (and
// those of its separate debug file), matches the function part, and places
// each probe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "symbols/probe_site.h"
#include "symbols/search_paths.h"

namespace funclatency {

class NameMatcher;

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
  // With `exact_name_lookup`, an exact function name made of identifier
  // characters ("malloc", "_ZNSo5flushEv") is looked up by name: through the
  // hash tables of .dynsym, with only the candidates demangled, instead of
  // reading every symbol of the file; what it resolves to is the same. A
  // name found that way is matched as it is written: a C++ function whose
  // own identifier starts with "_Z" (reserved to the implementation) is not
  // found by its mangled name. False always reads the whole tables.
  explicit ElfSymbolResolver(SearchPaths paths = {}, bool exact_name_lookup = true);
  ~ElfSymbolResolver();

  // Every function `spec` names, aliases at one address folded into one. A
  // spec that matches nothing is a kBadInput error with close names in
  // Error::hint.
  Result<std::vector<ProbeSite>> resolve(const TargetSpec& spec, const ResolveOptions& options);
  // resolve(), with the binary and what was skipped. A BINARY given as a
  // path through a process's root ("/proc/PID/root/app/x") is reported as
  // given.
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
  // The functions of `path` an exact `name` can match, read by name; null
  // when a lookup by name cannot answer for the file (Go code).
  Result<std::shared_ptr<const SymbolTable>> symbols_named(const std::string& path,
                                                           const std::string& name);
  // What `matcher` is matched against: symbols_named() where it applies and
  // finds a match, else symbols_of().
  Result<std::shared_ptr<const SymbolTable>> table_for(const std::string& path,
                                                       const NameMatcher& matcher);
  Result<ElfFile> open_file(const std::string& path);
  // resolve_in_file(), reporting the file as `shown_path`.
  Result<Resolution> resolve_shown(const std::string& path, const std::string& shown_path,
                                   const TargetSpec& spec, const ResolveOptions& options);

  SearchPaths paths_;
  bool exact_name_lookup_ = true;
  // Parsed files by path: several targets often name one binary.
  std::map<std::string, std::shared_ptr<const SymbolTable>> tables_;
  // Tables read by name, by path and name; files opened, by path.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const SymbolTable>> named_tables_;
  std::map<std::string, ElfFile> files_;
};

// Every function the targets match, probeable or not (with the reason), for
// -l. No limit on the number of matches applies.
Result<std::vector<ListedFunction>> list_functions(ElfSymbolResolver& resolver,
                                                   std::span<const TargetSpec> specs,
                                                   const ResolveOptions& options);

}  // namespace funclatency
