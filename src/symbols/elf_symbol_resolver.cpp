#include "symbols/elf_symbol_resolver.h"

#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "symbols/binary_locator.h"
#include "symbols/debug_file.h"
#include "symbols/demangle.h"
#include "symbols/elf_file.h"
#include "symbols/go_binary.h"
#include "symbols/ifunc_target.h"
#include "symbols/name_matcher.h"
#include "symbols/proc_root_path.h"
#include "symbols/process_files.h"

namespace funclatency {

struct ElfSymbolResolver::SymbolTable {
  struct Function {
    std::string raw;
    std::string demangled;
    std::string unqualified;
    std::string distinct;  // DemangledNames::distinct
    uint64_t address = 0;
    uint64_t size = 0;
    uint8_t binding = STB_GLOBAL;
    // STT_GNU_IFUNC: `address` is the implementation the loader picks when
    // that could be found (size 0 when no symbol covers it), else the resolver.
    bool ifunc = false;
    bool ifunc_resolved = false;
    bool go = false;  // listed in the file's pclntab: Go code

    SymbolNames names() const { return {raw, demangled, unqualified, distinct}; }
  };

  explicit SymbolTable(ElfFile file) : binary(std::move(file)) {}

  ElfFile binary;           // code bytes and file offsets come from here
  std::string symbol_file;  // the binary, or its debug file
  std::vector<Function> functions;
  std::optional<GoCode> go;  // a Go binary: its version (goid_offset 0: unsupported)
};

namespace {

using Function = ElfSymbolResolver::SymbolTable::Function;

// Which of several names for one address users should read: global before
// local, no leading underscore, strong before weak, then the shorter.
auto display_rank(const Function& function) {
  return std::make_tuple(function.binding == STB_LOCAL, function.raw.starts_with('_'),
                         function.binding == STB_WEAK, function.raw.size(),
                         std::string_view(function.raw));
}

// Why a function cannot carry an entry and a return probe, or "" if it can.
std::string refusal_reason(const Function& function, const ElfSymbolResolver::SymbolTable& table) {
  const ElfFile& binary = table.binary;
  if (function.go && table.go && table.go->goid_offset == 0) {
    return "is Go code built with " + table.go->version +
           ": funclatency pairs Go calls per goroutine from Go 1.17 on (amd64 register ABI)";
  }
  if (function.raw.find(".cold") != std::string::npos) {
    return "is a cold fragment of another function (entered by a jump, not a call)";
  }
  if (function.ifunc && !function.ifunc_resolved) {
    return "is an IFUNC whose implementation is picked at load time, and funclatency could "
           "not ask the loader which (the library is not loaded in funclatency itself); "
           "name the implementation instead";
  }
  if (function.size == 0 && !function.ifunc_resolved) return "has size 0 in the symbol table";
  if (!binary.in_executable_segment(function.address, std::max<uint64_t>(function.size, 1))) {
    return "is outside the executable code of " + binary.path();
  }
  return {};
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string did_you_mean(const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::string hint = "did you mean: ";
  for (size_t i = 0; i < names.size(); ++i) hint += (i ? ", " : "") + names[i];
  return hint + "?";
}

// The size of the first function (not an IFUNC) of the file's symbols at an
// address, if there is one.
using SizeAt = std::function<std::optional<uint64_t>(uint64_t address)>;

// IFUNC symbols move to the implementation the loader picks, taking the
// size of a symbol found there (folding them with it as aliases).
void point_ifuncs_at_their_implementations(ElfSymbolResolver::SymbolTable& table,
                                           const SizeAt& size_at) {
  for (Function& function : table.functions) {
    if (!function.ifunc) continue;
    const auto target = ifunc_target(table.binary.path(), function.raw);
    if (!target) continue;
    function.address = *target;
    function.size = size_at(*target).value_or(0);
    function.ifunc_resolved = true;
  }
}

// The table's functions, one per name and address: .symtab and .dynsym (and
// the debug file) repeat most symbols.
void add_functions(ElfSymbolResolver::SymbolTable& table, const std::vector<ElfSymbol>& symbols) {
  std::set<std::pair<std::string_view, uint64_t>> seen;
  table.functions.reserve(symbols.size());
  for (const ElfSymbol& symbol : symbols) {
    if (!seen.emplace(symbol.name, symbol.address).second) continue;
    Function function;
    function.raw = symbol.name;
    DemangledNames names = demangled_names(symbol.name);
    function.demangled = std::move(names.readable);
    function.unqualified = std::move(names.unqualified);
    function.distinct = std::move(names.distinct);
    function.address = symbol.address;
    function.size = symbol.size;
    function.binding = symbol.binding;
    function.ifunc = symbol.ifunc;
    table.functions.push_back(std::move(function));
  }
}

// True when every function an exact name can match is found from that name
// alone: a name of identifier characters (and '.', as in "f.cold"). A C++
// name as users write it ("ns::f", "f(int)") needs every name demangled.
bool looked_up_by_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  });
}

// The symbols of `file` an exact, identifier-like `name` can match, in the
// order symbols() lists them. A mangled name only matches itself. Any other
// name also matches C++ functions of the global namespace whose name without
// parameters is `name`: mangled "_Z<length><name>..." (or "_ZL..." with
// internal linkage), the only manglings that demangle to "name(...)".
std::vector<ElfSymbol> symbols_for_exact_name(const ElfFile& file, std::string_view name) {
  if (name.starts_with("_Z")) return file.symbols_named(name);
  const std::string length = std::to_string(name.size());
  const std::string global = "_Z" + length + std::string(name);
  const std::string internal = "_ZL" + length + std::string(name);
  return file.symbols_where([&](const ElfSymbolView& symbol) {
    return symbol.name == name || symbol.name.starts_with(global) ||
           symbol.name.starts_with(internal);
  });
}

// The first function (not an IFUNC) at `address` in `file`, as SizeAt.
std::optional<uint64_t> size_in_file(const ElfFile& file, uint64_t address) {
  const auto at = file.symbols_where([address](const ElfSymbolView& symbol) {
    return symbol.address == address && !symbol.ifunc;
  });
  if (at.empty()) return std::nullopt;
  return at.front().size;
}

// A Go binary lists every function in its pclntab, which survives
// `-ldflags=-s -w`: those the symbol tables lack join them, and every one is
// marked as Go code.
Result<void> add_go_functions(ElfSymbolResolver::SymbolTable& table) {
  auto go = read_go_binary(table.binary);
  if (!go) return std::unexpected(go.error());
  if (!*go) return {};
  const GoVersion& version = (*go)->version;
  table.go = GoCode{version.text, version.major, version.minor, (*go)->goid_offset.value_or(0)};
  std::map<uint64_t, const GoFunction*> listed;
  for (const GoFunction& function : (*go)->functions) listed.emplace(function.address, &function);
  std::set<uint64_t> in_symbols;
  for (Function& function : table.functions) {
    function.go = listed.contains(function.address);
    if (function.go) in_symbols.insert(function.address);
  }
  for (const auto& [address, go_function] : listed) {
    if (in_symbols.contains(address)) continue;
    Function function;
    function.raw = function.demangled = function.unqualified = go_function->name;
    function.address = address;
    function.size = go_function->size;
    function.go = true;
    table.functions.push_back(std::move(function));
  }
  return {};
}

using Aliases = std::map<uint64_t, std::vector<const Function*>>;

// Matching names, grouped by address: aliases are one function.
Aliases matches_by_address(const ElfSymbolResolver::SymbolTable& table,
                           const NameMatcher& matcher) {
  Aliases by_address;
  for (const Function& function : table.functions) {
    if (matcher.matches(function.names())) by_address[function.address].push_back(&function);
  }
  return by_address;
}

// Nothing matched: the error names close names, or says why there are none.
std::unexpected<Error> no_match_error(const ElfSymbolResolver::SymbolTable& table,
                                      const NameMatcher& matcher, const std::string& shown_path) {
  std::set<std::string> unique_names;
  for (const Function& function : table.functions) unique_names.insert(function.unqualified);
  const std::vector<std::string> candidates(unique_names.begin(), unique_names.end());
  std::string hint = did_you_mean(close_names(matcher.text(), candidates));
  if (table.functions.empty()) {
    hint = "it has no function symbols: stripped, and no debug file found";
  }
  return bad_input(matcher.describe_no_match() + " in " + shown_path, hint);
}

// One site per address, under the name users read best and the largest size
// of its aliases; or, when it cannot be probed, a refusal with the reason.
// `table` owns the ElfFile the sites keep alive.
void add_sites(Resolution& resolution, const Aliases& by_address,
               const std::shared_ptr<const ElfSymbolResolver::SymbolTable>& table) {
  for (const auto& [address, aliases] : by_address) {
    const Function& shown = **std::min_element(
        aliases.begin(), aliases.end(),
        [](const Function* a, const Function* b) { return display_rank(*a) < display_rank(*b); });
    uint64_t size = 0;
    for (const Function* alias : aliases) size = std::max(size, alias->size);
    Function extent = shown;
    extent.size = size;
    if (std::string reason = refusal_reason(extent, *table); !reason.empty()) {
      resolution.refused.push_back(RefusedFunction{resolution.binary, shown.demangled, shown.raw,
                                                   address, size, std::move(reason)});
      continue;
    }
    ProbeSite site;
    site.binary = resolution.binary;
    site.attach_path = resolution.attach_path;
    site.symbol = shown.demangled;
    site.raw_symbol = shown.raw;
    site.address = address;
    site.size = size;
    site.file_offset = *table->binary.file_offset(address);
    site.file = std::shared_ptr<const ElfFile>(table, &table->binary);
    if (shown.go) site.go = table->go;
    resolution.sites.push_back(std::move(site));
  }
}

// Errors for a resolution with no probeable function, or more than the limit.
Result<void> check_site_count(const Resolution& resolution, const NameMatcher& matcher,
                              size_t max_matches) {
  const std::string& shown_path = resolution.binary;
  if (resolution.sites.empty()) {
    const RefusedFunction& first = resolution.refused.front();
    if (matcher.is_exact()) {
      return bad_input("function \"" + first.symbol + "\" in " + shown_path +
                       " cannot be probed: it " + first.reason);
    }
    return bad_input(
        matcher.describe() + " in " + shown_path + " matches only functions that cannot be probed",
        "e.g. \"" + first.symbol + "\" " + first.reason);
  }
  if (resolution.sites.size() > max_matches) {
    return bad_input(matcher.describe() + " matches " + std::to_string(resolution.sites.size()) +
                         " functions in " + shown_path + ", more than the limit of " +
                         std::to_string(max_matches),
                     "narrow the pattern, or raise the limit with --max-functions N");
  }
  return {};
}

// Distinct functions that share a name (static functions of several files,
// one C++ name's overloads demangled alike, a Rust generic's instantiations
// in legacy mangling) need distinct names: the name the symbol itself tells
// apart where it has one (a legacy Rust hash), else the address.
void disambiguate_names(std::vector<ProbeSite>& sites) {
  std::map<std::string, int> name_counts;
  for (const ProbeSite& site : sites) ++name_counts[site.symbol];
  std::vector<std::string> names;
  std::map<std::string, int> distinct_counts;
  for (const ProbeSite& site : sites) {
    std::string name = site.symbol;
    if (name_counts[site.symbol] > 1) {
      std::string distinct = distinct_name(site.raw_symbol);
      name = distinct.empty() ? name + " @" + hex(site.address) : std::move(distinct);
    }
    ++distinct_counts[name];
    names.push_back(std::move(name));
  }
  for (size_t i = 0; i < sites.size(); ++i) {
    if (distinct_counts[names[i]] > 1) names[i] += " @" + hex(sites[i].address);
    sites[i].symbol = std::move(names[i]);
  }
}

// A function named by what tells it apart (a legacy Rust path with its hash,
// as `-l` shows two functions of one path, or its mangled name) is shown by
// it: two targets that each name one of them get two series named apart, not
// two of one name.
void keep_names_matched_as_distinct(std::vector<ProbeSite>& sites, const NameMatcher& matcher) {
  for (ProbeSite& site : sites) {
    std::string distinct = distinct_name(site.raw_symbol);
    if (distinct.empty()) continue;
    const DemangledNames names = demangled_names(site.raw_symbol);
    if (!matcher.matches({names.readable, names.readable, names.unqualified})) {
      site.symbol = std::move(distinct);
    }
  }
}

}  // namespace

ElfSymbolResolver::ElfSymbolResolver(SearchPaths paths, bool exact_name_lookup)
    : paths_(std::move(paths)), exact_name_lookup_(exact_name_lookup) {}
ElfSymbolResolver::~ElfSymbolResolver() = default;

Result<ElfFile> ElfSymbolResolver::open_file(const std::string& path) {
  if (auto cached = files_.find(path); cached != files_.end()) return cached->second;
  auto file = ElfFile::open(path);
  if (!file) return std::unexpected(file.error());
  files_.emplace(path, *file);
  return file;
}

Result<std::shared_ptr<const ElfSymbolResolver::SymbolTable>> ElfSymbolResolver::symbols_of(
    const std::string& path) {
  if (auto cached = tables_.find(path); cached != tables_.end()) return cached->second;
  auto binary = open_file(path);
  if (!binary) return std::unexpected(binary.error());
  auto table = std::make_shared<SymbolTable>(std::move(*binary));
  table->symbol_file = path;
  const ElfFile& file = table->binary;

  std::vector<ElfSymbol> symbols = file.symbols();
  if (!file.has_symtab()) {
    if (auto debug = find_debug_file(file, paths_)) {
      table->symbol_file = debug->path();
      symbols.insert(symbols.end(), debug->symbols().begin(), debug->symbols().end());
    }
  }
  add_functions(*table, symbols);
  std::map<uint64_t, uint64_t> sizes;
  for (const Function& function : table->functions) {
    if (!function.ifunc) sizes.emplace(function.address, function.size);
  }
  point_ifuncs_at_their_implementations(*table, [&sizes](uint64_t address) {
    const auto sized = sizes.find(address);
    return sized != sizes.end() ? std::optional(sized->second) : std::nullopt;
  });
  if (auto go = add_go_functions(*table); !go) return std::unexpected(go.error());
  tables_.emplace(path, table);
  return table;
}

Result<std::shared_ptr<const ElfSymbolResolver::SymbolTable>> ElfSymbolResolver::symbols_named(
    const std::string& path, const std::string& name) {
  const auto key = std::make_pair(path, name);
  if (auto cached = named_tables_.find(key); cached != named_tables_.end()) return cached->second;
  auto binary = open_file(path);
  if (!binary) return std::unexpected(binary.error());
  // Go code is listed in the pclntab too, under names the symbols can differ from.
  if (has_go_sections(*binary)) return std::shared_ptr<const SymbolTable>();
  auto table = std::make_shared<SymbolTable>(std::move(*binary));
  table->symbol_file = path;
  const ElfFile& file = table->binary;

  // The same files, in the same order, as symbols_of() reads.
  std::vector<ElfSymbol> symbols = symbols_for_exact_name(file, name);
  std::optional<ElfFile> debug;
  if (!file.has_symtab()) debug = find_debug_file(file, paths_);
  if (debug) {
    table->symbol_file = debug->path();
    std::vector<ElfSymbol> more = symbols_for_exact_name(*debug, name);
    symbols.insert(symbols.end(), more.begin(), more.end());
  }
  add_functions(*table, symbols);
  point_ifuncs_at_their_implementations(*table, [&file, &debug](uint64_t address) {
    auto size = size_in_file(file, address);
    if (!size && debug) size = size_in_file(*debug, address);
    return size;
  });
  named_tables_.emplace(key, table);
  return table;
}

Result<std::shared_ptr<const ElfSymbolResolver::SymbolTable>> ElfSymbolResolver::table_for(
    const std::string& path, const NameMatcher& matcher) {
  const bool by_name = exact_name_lookup_ && matcher.is_exact() &&
                       looked_up_by_name(matcher.text()) && !tables_.contains(path);
  if (by_name) {
    auto named = symbols_named(path, matcher.text());
    if (!named) return std::unexpected(named.error());
    // Nothing found by name: the whole tables say so, with close names.
    if (*named && std::ranges::any_of((*named)->functions, [&matcher](const Function& function) {
          return matcher.matches(function.names());
        })) {
      return *named;
    }
  }
  return symbols_of(path);
}

Result<std::vector<ProbeSite>> ElfSymbolResolver::resolve(const TargetSpec& spec,
                                                          const ResolveOptions& options) {
  auto resolution = resolve_detailed(spec, options);
  if (!resolution) return std::unexpected(resolution.error());
  return std::move(resolution->sites);
}

Result<Resolution> ElfSymbolResolver::resolve_detailed(const TargetSpec& spec,
                                                       const ResolveOptions& options) {
  auto path = locate_binary(spec.binary, options.pid, paths_);
  if (!path) return std::unexpected(path.error());
  if (split_proc_root(spec.binary)) return resolve_shown(*path, spec.binary, spec, options);
  return resolve_in_file(*path, spec, options);
}

Result<Resolution> ElfSymbolResolver::resolve_in_file(const std::string& path,
                                                      const TargetSpec& spec,
                                                      const ResolveOptions& options) {
  // Users read the path the process knows; probes attach through ours.
  return resolve_shown(path, options.pid ? path_in_process(*options.pid, path) : path, spec,
                       options);
}

Result<Resolution> ElfSymbolResolver::resolve_shown(const std::string& path,
                                                    const std::string& shown_path,
                                                    const TargetSpec& spec,
                                                    const ResolveOptions& options) {
  auto matcher = NameMatcher::create(spec.function, spec.regex);
  if (!matcher) return std::unexpected(matcher.error());
  auto table = table_for(path, *matcher);
  if (!table) return std::unexpected(table.error());

  const Aliases by_address = matches_by_address(**table, *matcher);
  if (by_address.empty()) return no_match_error(**table, *matcher, shown_path);

  Resolution resolution;
  resolution.binary = shown_path;
  resolution.attach_path = shown_path == path ? std::string() : path;
  resolution.symbol_file = (*table)->symbol_file;
  add_sites(resolution, by_address, *table);
  if (auto checked = check_site_count(resolution, *matcher, options.max_matches); !checked) {
    return std::unexpected(checked.error());
  }
  keep_names_matched_as_distinct(resolution.sites, *matcher);
  disambiguate_names(resolution.sites);
  return resolution;
}

namespace {
// What a probe site and a refused function have alike, as --list shows it.
template <typename Found>
ListedFunction listed_as(const Found& found) {
  return ListedFunction{.symbol = found.symbol,
                        .raw_symbol = found.raw_symbol,
                        .binary = found.binary,
                        .address = found.address,
                        .size = found.size};
}
}  // namespace

Result<std::vector<ListedFunction>> list_functions(ElfSymbolResolver& resolver,
                                                   std::span<const TargetSpec> specs,
                                                   const ResolveOptions& options) {
  ResolveOptions unlimited = options;
  unlimited.max_matches = std::numeric_limits<size_t>::max();
  std::vector<ListedFunction> listed;
  for (const TargetSpec& spec : specs) {
    auto resolution = resolver.resolve_detailed(spec, unlimited);
    if (!resolution) return std::unexpected(resolution.error());
    for (const ProbeSite& site : resolution->sites) {
      ListedFunction function = listed_as(site);
      function.file_offset = site.file_offset;
      function.site = site;
      listed.push_back(std::move(function));
    }
    for (const RefusedFunction& refused : resolution->refused) {
      ListedFunction function = listed_as(refused);
      function.refused_reason = refused.reason;
      listed.push_back(std::move(function));
    }
  }
  return listed;
}

}  // namespace funclatency
