// Lookups by exact name (ELF hash tables, candidates only) must find what
// reading the whole symbol tables finds: the same symbols in ElfFile, the
// same probe sites, refusals and errors in the resolver. Checked on real
// libraries (libc, libstdc++) and on fixtures whose names need more than the
// hash: C and C++ functions sharing a name, static functions, debug files.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbol_resolver.h"

namespace funclatency {
namespace {

// The file this test process maps whose name contains `fragment`.
std::string mapped_library(const std::string& fragment) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash != std::string::npos && line.find(fragment, slash) != std::string::npos) {
      return line.substr(slash);
    }
  }
  return {};
}

using testing::read_bytes;

bool same_symbol(const ElfSymbol& a, const ElfSymbol& b) {
  return a.name == b.name && a.address == b.address && a.size == b.size && a.binding == b.binding &&
         a.ifunc == b.ifunc && a.dynamic == b.dynamic;
}

std::vector<ElfSymbol> named_in_whole_table(const ElfFile& file, const std::string& name) {
  std::vector<ElfSymbol> named;
  for (const ElfSymbol& symbol : file.symbols()) {
    if (symbol.name == name) named.push_back(symbol);
  }
  return named;
}

// symbols_named(name) lists exactly what symbols() lists under that name,
// for every name the file has and for names it does not have.
void expect_lookups_match_whole_table(const ElfFile& file) {
  std::set<std::string> names;
  for (const ElfSymbol& symbol : file.symbols()) names.insert(symbol.name);
  ASSERT_GT(names.size(), 5u) << file.path();
  names.insert({"no_such_function_anywhere", "", "_ZNo_such_mangled_nameEv"});
  size_t mismatches = 0;
  for (const std::string& name : names) {
    const std::vector<ElfSymbol> expected = named_in_whole_table(file, name);
    const std::vector<ElfSymbol> found = file.symbols_named(name);
    const bool same = found.size() == expected.size() &&
                      std::equal(found.begin(), found.end(), expected.begin(), same_symbol);
    if (!same && ++mismatches <= 10) {
      ADD_FAILURE() << file.path() << ": \"" << name << "\": " << found.size() << " found by name, "
                    << expected.size() << " in the whole table";
    }
  }
  EXPECT_EQ(mismatches, 0u) << file.path();
}

// The section header of the first section of `type` in an ELF64 image.
Elf64_Shdr* section_of_type(std::vector<uint8_t>& image, uint32_t type) {
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  for (size_t i = 0; i < header.e_shnum; ++i) {
    auto* section =
        reinterpret_cast<Elf64_Shdr*>(image.data() + header.e_shoff + i * header.e_shentsize);
    if (section->sh_type == type) return section;
  }
  return nullptr;
}

// The library mapped under `fragment`, parsed from a copy whose .gnu.hash
// `edit` has changed (its header, or its bytes in the image).
Result<ElfFile> with_edited_gnu_hash(
    const std::string& fragment, const std::string& name,
    const std::function<void(std::vector<uint8_t>& image, Elf64_Shdr& gnu_hash)>& edit) {
  const std::string path = mapped_library(fragment);
  std::vector<uint8_t> image = read_bytes(path);
  if (path.empty() || image.size() < sizeof(Elf64_Ehdr)) {
    return bad_input(fragment + " is not mapped by the test");
  }
  Elf64_Shdr* gnu_hash = section_of_type(image, SHT_GNU_HASH);
  if (gnu_hash == nullptr) return bad_input(path + " has no .gnu.hash");
  edit(image, *gnu_hash);
  return ElfFile::parse(image, name);
}

TEST(ExactLookup, HashTablesFindWhatTheWholeTablesHaveInRealLibraries) {
  for (const char* fragment : {"/libc.so", "/libstdc++.so"}) {
    const std::string path = mapped_library(fragment);
    ASSERT_FALSE(path.empty()) << fragment << " is not mapped by the test";
    auto file = ElfFile::open(path);
    ASSERT_TRUE(file) << file.error().message();
    ASSERT_TRUE(file->section(".gnu.hash")) << path;
    expect_lookups_match_whole_table(*file);
  }
}

TEST(ExactLookup, LookupsMatchTheWholeTablesInFixtures) {
  // Libraries (.dynsym with .gnu.hash, and .symtab), an executable, a C++
  // program, and a stripped executable (.dynsym only).
  for (const std::string& path :
       {std::string(SYMFIX_LIB), std::string(SYMFIX_NAMES), std::string(SYMFIX_PIE_CET),
        std::string(SYMFIX_CPP), std::string(SYMFIX_DIR) + "/debuglink/symfix_debuglink"}) {
    auto file = ElfFile::open(path);
    ASSERT_TRUE(file) << file.error().message();
    if (file->symbols().size() < 6) continue;  // the stripped one may export too little
    expect_lookups_match_whole_table(*file);
  }
}

TEST(ExactLookup, SysvHashFindsWhatTheWholeTableHas) {
  // libc carries .hash beside .gnu.hash; with .gnu.hash hidden, lookups go
  // through .hash.
  bool has_sysv_hash = false;
  auto file = with_edited_gnu_hash("/libc.so", "libc without .gnu.hash",
                                   [&has_sysv_hash](std::vector<uint8_t>& image, Elf64_Shdr& gnu) {
                                     has_sysv_hash = section_of_type(image, SHT_HASH) != nullptr;
                                     gnu.sh_type = SHT_PROGBITS;
                                   });
  ASSERT_TRUE(file) << file.error().message();
  if (!has_sysv_hash) GTEST_SKIP() << "libc has no .hash";
  expect_lookups_match_whole_table(*file);
}

TEST(ExactLookup, NamesAreLookedUpThroughTheGnuHash) {
  // With every Bloom filter bit cleared, .gnu.hash says no exported name is
  // there: a lookup that believes it finds none, while the whole table (and
  // the loader's view without the hash) still lists them.
  auto file = with_edited_gnu_hash(
      "/libstdc++.so", "libstdc++ with an empty Bloom filter",
      [](std::vector<uint8_t>& image, Elf64_Shdr& gnu) {
        uint32_t bloom_words = 0;
        std::memcpy(&bloom_words, image.data() + gnu.sh_offset + 8, sizeof bloom_words);
        std::memset(image.data() + gnu.sh_offset + 16, 0, size_t{bloom_words} * 8);
      });
  ASSERT_TRUE(file) << file.error().message();
  const std::string name = "_ZNSo5flushEv";
  EXPECT_EQ(named_in_whole_table(*file, name).size(), 1u);
  EXPECT_TRUE(file->symbols_named(name).empty());
}

TEST(ExactLookup, SymbolsWhereKeepsTheOrderOfTheWholeTable) {
  auto file = ElfFile::open(SYMFIX_PIE_CET);
  ASSERT_TRUE(file) << file.error().message();
  const auto kept = file->symbols_where(
      [](const ElfSymbolView& symbol) { return symbol.name.starts_with("symfix_family_"); });
  std::vector<ElfSymbol> expected;
  for (const ElfSymbol& symbol : file->symbols()) {
    if (symbol.name.starts_with("symfix_family_")) expected.push_back(symbol);
  }
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(kept.size(), expected.size());
  EXPECT_TRUE(std::equal(kept.begin(), kept.end(), expected.begin(), same_symbol));
}

// --- the resolver, with and without lookups by name ----------------------

std::string describe(const Result<Resolution>& resolution) {
  if (!resolution) return "error: " + resolution.error().message();
  std::string text;
  for (const ProbeSite& site : resolution->sites) {
    text += "site " + site.binary + " | " + site.symbol + " | " + site.raw_symbol + " | " +
            std::to_string(site.address) + " | " + std::to_string(site.size) + " | " +
            std::to_string(site.file_offset) + " | " + (site.go ? site.go->version : "-") + " | " +
            site.attach_path + " | " + (site.file ? site.file->path() : "no file") + "\n";
  }
  for (const RefusedFunction& refused : resolution->refused) {
    text += "refused " + refused.symbol + " | " + refused.raw_symbol + " | " +
            std::to_string(refused.address) + " | " + std::to_string(refused.size) + " | " +
            refused.reason + "\n";
  }
  return text + "symbols from " + resolution->symbol_file + "\n";
}

// Every name resolves alike through a resolver that looks names up and one
// that reads whole tables; returns how many names resolved to sites.
size_t expect_same_resolutions(const std::string& path, const std::vector<std::string>& names,
                               SearchPaths paths = {}) {
  ElfSymbolResolver by_name(paths, true);
  ElfSymbolResolver whole(paths, false);
  size_t resolved = 0;
  for (const std::string& name : names) {
    const TargetSpec spec{.binary = {}, .function = name, .regex = false};
    const auto fast = by_name.resolve_in_file(path, spec, {});
    const auto full = whole.resolve_in_file(path, spec, {});
    EXPECT_EQ(describe(fast), describe(full)) << path << ": \"" << name << "\"";
    if (full) resolved += full->sites.size();
  }
  return resolved;
}

// Every `step`th function name of the file, and those of `extra`.
std::vector<std::string> names_of(const std::string& path, size_t step,
                                  std::vector<std::string> extra = {}) {
  auto file = ElfFile::open(path);
  EXPECT_TRUE(file) << path;
  if (!file) return extra;
  std::set<std::string> names;
  for (const ElfSymbol& symbol : file->symbols()) names.insert(symbol.name);
  size_t i = 0;
  for (const std::string& name : names) {
    if (i++ % step == 0) extra.push_back(name);
  }
  return extra;
}

TEST(ExactLookup, ResolverGivesTheSameSitesInLibc) {
  // IFUNCs (moved to their implementation, sized by another symbol),
  // versioned duplicates (pthread_key_create@GLIBC_2.2.5 and @@GLIBC_2.34),
  // names that are not there, and a sample of the rest.
  const std::string path = mapped_library("/libc.so");
  ASSERT_FALSE(path.empty());
  const auto names = names_of(path, 25,
                              {"memcpy", "strlen", "strchr", "pthread_key_create", "sem_post",
                               "malloc", "no_such_function", "mallok"});
  EXPECT_GT(expect_same_resolutions(path, names), names.size() / 2);
}

TEST(ExactLookup, ResolverGivesTheSameSitesInLibstdcxx) {
  const std::string path = mapped_library("/libstdc++.so");
  ASSERT_FALSE(path.empty());
  const auto names = names_of(
      path, 60,
      {"_ZNSt6chrono3_V212steady_clock3nowEv", "_ZNSo5flushEv", "_ZNSo5flushEx", "__cxa_throw"});
  EXPECT_GT(expect_same_resolutions(path, names), names.size() / 2);
}

TEST(ExactLookup, ResolverFindsCAndCxxFunctionsOfOneNameAlike) {
  // "twin" is a C function and a C++ overload (_Z4twind): both match it.
  // "lonely" is static C++ (_ZL6lonelyi, .symtab only).
  const std::string path = SYMFIX_NAMES;
  EXPECT_EQ(expect_same_resolutions(path, {"twin", "_Z4twind", "lonely", "_ZL6lonelyi",
                                           "_ZN5names8exportedEi", "exported", "twinn"}),
            6u);
  ElfSymbolResolver by_name;
  const auto twin = by_name.resolve_in_file(path, {.binary = {}, .function = "twin"}, {});
  ASSERT_TRUE(twin) << twin.error().message();
  EXPECT_EQ(twin->sites.size(), 2u) << describe(twin);
}

TEST(ExactLookup, ResolverGivesTheSameSitesInExecutablesAndDebugFiles) {
  // Aliases (fast_op, fast_op_alias, __fast_op_impl), a static function,
  // refusals (size 0, outside code), a C++ program, a stripped binary whose
  // symbols are in its debug file.
  const std::vector<std::string> names = {
      "slow_op",          "fast_op",          "fast_op_alias", "__fast_op_impl",
      "local_helper",     "symfix_family_3",  "main",          "zero_size_function",
      "function_in_data", "plain_c_function", "no_such_thing", "slow_opp"};
  EXPECT_GT(expect_same_resolutions(SYMFIX_PIE_CET, names), 5u);
  EXPECT_GT(expect_same_resolutions(SYMFIX_CPP, names_of(SYMFIX_CPP, 1)), 5u);
  EXPECT_GT(expect_same_resolutions(std::string(SYMFIX_DIR) + "/debuglink/symfix_debuglink", names),
            5u);
  SearchPaths debug_root;
  debug_root.debug_roots = {std::string(SYMFIX_DIR) + "/debugroot"};
  EXPECT_GT(expect_same_resolutions(std::string(SYMFIX_DIR) + "/buildid/symfix_buildid", names,
                                    debug_root),
            5u);
}

#ifdef GOFIX_DIR
TEST(ExactLookup, ResolverGivesTheSameSitesInGoBinaries) {
  // Go code is read from the pclntab: lookups by name leave it to the whole tables.
  for (const char* variant : {"plain", "stripped"}) {
    const std::string path = std::string(GOFIX_DIR) + "/gofix_" + variant;
    EXPECT_GT(expect_same_resolutions(path, {"main.main", "main.work", "runtime.mallocgc"}), 0u)
        << path;
  }
}
#endif

}  // namespace
}  // namespace funclatency
