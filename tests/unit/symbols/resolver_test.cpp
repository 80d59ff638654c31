#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "symbols/elf_file.h"
#include "symbols/elf_symbol_resolver.h"
#include "symbols/target_spec.h"
#include "waiting_process.h"

namespace funclatency {
namespace {

std::string real(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) != nullptr ? buffer : "";
}

Result<std::vector<ProbeSite>> resolve(const std::string& target, ResolveOptions options = {},
                                       bool regex = false, SearchPaths paths = {}) {
  auto spec = parse_target(target, regex);
  if (!spec) return std::unexpected(spec.error());
  ElfSymbolResolver resolver(std::move(paths));
  return resolver.resolve(*spec, options);
}

// The site's code, read through the file the resolver shares with the
// planner, starts where the symbol says (an endbr64 in CET builds).
bool code_starts_with_endbr64(const ProbeSite& site) {
  return site.file && starts_with_endbr64(site.file->bytes_at(site.file_offset, 4));
}

std::set<std::string> symbols_of(const std::vector<ProbeSite>& sites) {
  std::set<std::string> names;
  for (const auto& site : sites) names.insert(site.symbol);
  return names;
}

// --- exact names ---------------------------------------------------------

TEST(Resolver, ExactNameInPieCetBinaryIsPlacedAfterEndbr64) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":slow_op");
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  const ProbeSite& site = sites->front();
  EXPECT_EQ(site.binary, real(SYMFIX_PIE_CET));
  EXPECT_EQ(site.symbol, "slow_op");
  EXPECT_EQ(site.raw_symbol, "slow_op");
  EXPECT_GT(site.size, 0u);
  EXPECT_TRUE(code_starts_with_endbr64(site));
}

TEST(Resolver, ExactNameInNonPieBinaryHasNoSkipAndTheRunningOffset) {
  testing::WaitingProcess process({SYMFIX_NOPIE, "--wait"});
  ASSERT_TRUE(process.ready());
  auto sites = resolve(std::string(SYMFIX_NOPIE) + ":slow_op");
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  EXPECT_FALSE(code_starts_with_endbr64(sites->front()));
  EXPECT_EQ(sites->front().address, process.address_of("slow_op"));
  EXPECT_EQ(sites->front().file_offset,
            testing::file_offset_in_maps(process.pid(), process.address_of("slow_op")));
}

TEST(Resolver, FunctionOfPidWithEmptyBinaryHasTheRunningOffset) {
  testing::WaitingProcess process({SYMFIX_PIE_CET, "--wait"});
  ASSERT_TRUE(process.ready());
  ResolveOptions options;
  options.pid = process.pid();
  auto sites = resolve(":fast_op", options);
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  EXPECT_EQ(sites->front().binary, real(SYMFIX_PIE_CET));
  EXPECT_EQ(sites->front().file_offset,
            testing::file_offset_in_maps(process.pid(), process.address_of("fast_op")));
}

TEST(Resolver, UnknownFunctionSuggestsCloseNames) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":slow_opp");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(sites.error().context, "no function \"slow_opp\" in " + real(SYMFIX_PIE_CET));
  EXPECT_TRUE(sites.error().hint.starts_with("did you mean: slow_op")) << sites.error().hint;
  EXPECT_NE(sites.error().hint.find("fast_op"), std::string::npos) << sites.error().hint;
}

TEST(Resolver, UnknownFunctionFarFromEverythingHasNoHint) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":qqqqqqqqqqqqqqqqqqqqqq");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(sites.error().hint, "");
}

TEST(Resolver, ZeroSizeFunctionIsRefusedWithReason) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":zero_size_function");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().message().find("size 0"), std::string::npos) << sites.error().message();
}

TEST(Resolver, FunctionOutsideExecutableCodeIsRefusedWithReason) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":function_in_data");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().message().find("outside the executable code"), std::string::npos)
      << sites.error().message();
}

TEST(Resolver, NotElfFileIsBadInput) {
  auto sites = resolve(std::string(SYMFIX_DIR) + "/../../../CMakeCache.txt:main");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().message().find("not an ELF file"), std::string::npos)
      << sites.error().message();
}

// --- aliases, patterns, regexes -------------------------------------------

TEST(Resolver, AliasesAreOneSiteShownByTheGlobalName) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":*fast_op*");
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  EXPECT_EQ(sites->front().symbol, "fast_op");
  // Asked by its alias, the alias is what the user reads.
  auto alias = resolve(std::string(SYMFIX_PIE_CET) + ":__fast_op_impl");
  ASSERT_TRUE(alias);
  ASSERT_EQ(alias->size(), 1u);
  EXPECT_EQ(alias->front().symbol, "__fast_op_impl");
  EXPECT_EQ(alias->front().file_offset, sites->front().file_offset);
}

TEST(Resolver, GlobMatchesAFamilyAndSkipsWhatCannotBeProbed) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":symfix_family_?");
  ASSERT_TRUE(sites) << sites.error().message();
  EXPECT_EQ(sites->size(), 10u);
  EXPECT_TRUE(symbols_of(*sites).contains("symfix_family_7"));

  auto spec = parse_target(std::string(SYMFIX_PIE_CET) + ":*_function*", false);
  ElfSymbolResolver resolver;
  auto detailed = resolver.resolve_detailed(*spec, {});
  ASSERT_FALSE(detailed) << "only refused functions match";
  auto wider = parse_target(std::string(SYMFIX_PIE_CET) + ":*o*", false);
  auto resolution = resolver.resolve_detailed(*wider, {});
  ASSERT_TRUE(resolution) << resolution.error().message();
  std::set<std::string> refused;
  for (const auto& function : resolution->refused) refused.insert(function.symbol);
  EXPECT_TRUE(refused.contains("zero_size_function"));
  EXPECT_TRUE(refused.contains("function_in_data"));
  EXPECT_FALSE(symbols_of(resolution->sites).contains("zero_size_function"));
  EXPECT_TRUE(symbols_of(resolution->sites).contains("slow_op"));
}

TEST(Resolver, PatternThatMatchesNothingSuggestsCloseNames) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":slow_opx*");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().context.find("pattern \"slow_opx*\""), std::string::npos);
  EXPECT_NE(sites.error().hint.find("slow_op"), std::string::npos);
}

TEST(Resolver, RegexMatchesAndBadRegexIsBadInput) {
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":^symfix_family_[0-4]$", {}, true);
  ASSERT_TRUE(sites) << sites.error().message();
  EXPECT_EQ(sites->size(), 5u);
  auto bad = resolve(std::string(SYMFIX_PIE_CET) + ":symfix_(family", {}, true);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(bad.error().message().find("does not compile"), std::string::npos);
}

TEST(Resolver, MoreMatchesThanTheLimitIsBadInputSayingHowToRaiseIt) {
  ResolveOptions options;
  options.max_matches = 3;
  auto sites = resolve(std::string(SYMFIX_PIE_CET) + ":symfix_family_*", options);
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().message().find("matches 10 functions"), std::string::npos);
  EXPECT_NE(sites.error().hint.find("--max-functions N"), std::string::npos);
  options.max_matches = 10;
  EXPECT_TRUE(resolve(std::string(SYMFIX_PIE_CET) + ":symfix_family_*", options));
}

// --- C++ ------------------------------------------------------------------

TEST(Resolver, CppMethodsByQualifiedNameMatchEveryOverload) {
  auto sites = resolve(std::string(SYMFIX_CPP) + ":shop::cart::Basket::add");
  ASSERT_TRUE(sites) << sites.error().message();
  EXPECT_EQ(symbols_of(*sites),
            (std::set<std::string>{"shop::cart::Basket::add(int)",
                                   "shop::cart::Basket::add(std::__cxx11::basic_string<char, "
                                   "std::char_traits<char>, std::allocator<char> > const&)"}));
  for (const auto& site : *sites) {
    EXPECT_TRUE(site.raw_symbol.starts_with("_ZN4shop4cart6Basket3add")) << site.raw_symbol;
    EXPECT_TRUE(code_starts_with_endbr64(site));
  }
}

TEST(Resolver, CppDemangledGlobMangledNameAndFullSignature) {
  auto glob = resolve(std::string(SYMFIX_CPP) + ":shop::cart::*");
  ASSERT_TRUE(glob) << glob.error().message();
  EXPECT_TRUE(symbols_of(*glob).contains("shop::cart::Basket::total() const"));
  EXPECT_TRUE(symbols_of(*glob).contains("int shop::cart::scale<int>(int)"));
  EXPECT_TRUE(symbols_of(*glob).contains("double shop::cart::scale<double>(double)"));

  auto mangled = resolve(std::string(SYMFIX_CPP) + ":_ZN4shop4cart6Basket3addEi");
  ASSERT_TRUE(mangled) << mangled.error().message();
  ASSERT_EQ(mangled->size(), 1u);
  EXPECT_EQ(mangled->front().symbol, "shop::cart::Basket::add(int)");

  auto signature = resolve(std::string(SYMFIX_CPP) + ":shop::cart::Basket::add(int)");
  ASSERT_TRUE(signature) << signature.error().message();
  EXPECT_EQ(signature->size(), 1u);

  auto c_function = resolve(std::string(SYMFIX_CPP) + ":plain_c_function");
  ASSERT_TRUE(c_function);
  EXPECT_EQ(c_function->front().symbol, "plain_c_function");
}

TEST(Resolver, CppMisspelledMethodSuggestsTheQualifiedName) {
  auto sites = resolve(std::string(SYMFIX_CPP) + ":shop::cart::Basket::totl");
  ASSERT_FALSE(sites);
  EXPECT_NE(sites.error().hint.find("shop::cart::Basket::total"), std::string::npos)
      << sites.error().hint;
}

// --- separate debug files ------------------------------------------------

void expect_symbols_from_debug_file(const std::string& binary, SearchPaths paths = {}) {
  auto stripped = ElfFile::open(binary);
  ASSERT_TRUE(stripped) << stripped.error().message();
  ASSERT_FALSE(stripped->has_symtab()) << binary << " should be stripped";

  ElfSymbolResolver resolver(std::move(paths));
  for (const std::string function : {"local_helper", "slow_op"}) {
    auto original = resolve(std::string(SYMFIX_PIE_CET) + ":" + function);
    ASSERT_TRUE(original);
    auto spec = parse_target(binary + ":" + function, false);
    auto resolution = resolver.resolve_detailed(*spec, {});
    ASSERT_TRUE(resolution) << resolution.error().message();
    EXPECT_NE(resolution->symbol_file, resolution->binary);
    EXPECT_TRUE(resolution->symbol_file.ends_with(".debug")) << resolution->symbol_file;
    ASSERT_EQ(resolution->sites.size(), 1u);
    const ProbeSite& site = resolution->sites.front();
    EXPECT_EQ(site.binary, real(binary));
    EXPECT_EQ(site.address, original->front().address);
    EXPECT_EQ(site.file_offset, original->front().file_offset);
  }
  // The debug file has no code; slow_op's code is read from the binary.
  auto slow_op = resolver.resolve(*parse_target(binary + ":slow_op", false), {});
  ASSERT_TRUE(slow_op);
  ASSERT_TRUE(slow_op->front().file);
  EXPECT_EQ(slow_op->front().file->path(), real(binary));
  EXPECT_TRUE(code_starts_with_endbr64(slow_op->front()));
}

TEST(Resolver, StrippedBinaryUsesDebugLinkInItsDirectory) {
  expect_symbols_from_debug_file(std::string(SYMFIX_DIR) + "/debuglink/symfix_debuglink");
}

TEST(Resolver, StrippedBinaryUsesDebugLinkInDotDebug) {
  expect_symbols_from_debug_file(std::string(SYMFIX_DIR) + "/debugsub/symfix_debugsub");
}

TEST(Resolver, StrippedBinaryUsesBuildIdUnderTheDebugRoot) {
  SearchPaths paths;
  paths.debug_roots = {std::string(SYMFIX_DIR) + "/debugroot"};
  expect_symbols_from_debug_file(std::string(SYMFIX_DIR) + "/buildid/symfix_buildid", paths);
}

TEST(Resolver, StrippedBinaryUsesDebugLinkUnderTheDebugRootMirroringItsDirectory) {
  // A copy of the stripped binary alone in a directory; its debug file under
  // <root>/<that directory>/, as /usr/lib/debug mirrors /usr/bin.
  namespace fs = std::filesystem;
  const fs::path directory = fs::path(::testing::TempDir()) / "mirrored-bin";
  const fs::path root = fs::path(::testing::TempDir()) / "mirrored-debug";
  fs::create_directories(directory);
  const fs::path binary = directory / "symfix_debuglink";
  fs::copy_file(std::string(SYMFIX_DIR) + "/debuglink/symfix_debuglink", binary,
                fs::copy_options::overwrite_existing);
  const fs::path debug_directory = root / fs::path(real(directory)).relative_path();
  fs::create_directories(debug_directory);
  fs::copy_file(std::string(SYMFIX_DIR) + "/debuglink/symfix_debuglink.debug",
                debug_directory / "symfix_debuglink.debug", fs::copy_options::overwrite_existing);
  SearchPaths paths;
  paths.debug_roots = {root};
  expect_symbols_from_debug_file(real(binary), paths);
}

TEST(Resolver, DebugFileOfAnotherBuildIsNotUsed) {
  // Same debuglink name, different contents: the CRC does not match.
  namespace fs = std::filesystem;
  const fs::path directory = fs::path(::testing::TempDir()) / "wrong-debug";
  fs::create_directories(directory);
  fs::copy_file(std::string(SYMFIX_DIR) + "/debuglink/symfix_debuglink",
                directory / "symfix_debuglink", fs::copy_options::overwrite_existing);
  fs::copy_file(SYMFIX_NOPIE, directory / "symfix_debuglink.debug",
                fs::copy_options::overwrite_existing);
  auto sites = resolve((directory / "symfix_debuglink").string() + ":local_helper");
  ASSERT_FALSE(sites);
  EXPECT_NE(sites.error().hint.find("no debug file"), std::string::npos) << sites.error().hint;
}

TEST(Resolver, StrippedBinaryWithoutDebugFileSaysSo) {
  auto sites = resolve(std::string(SYMFIX_DIR) + "/buildid/symfix_buildid:local_helper");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().hint.find("no debug file"), std::string::npos) << sites.error().hint;
}

// --- libraries ------------------------------------------------------------

TEST(Resolver, LibcMallocByEveryName) {
  std::set<uint64_t> offsets;
  std::set<std::string> binaries;
  for (const char* target : {"c:malloc", "libc:malloc", "libc.so.6:malloc"}) {
    auto sites = resolve(target);
    ASSERT_TRUE(sites) << target << ": " << sites.error().message();
    ASSERT_EQ(sites->size(), 1u) << target;
    EXPECT_EQ(sites->front().symbol, "malloc");
    offsets.insert(sites->front().file_offset);
    binaries.insert(sites->front().binary);
  }
  EXPECT_EQ(offsets.size(), 1u);
  ASSERT_EQ(binaries.size(), 1u);
  EXPECT_EQ(*binaries.begin(), real("/lib/x86_64-linux-gnu/libc.so.6"));
}

TEST(Resolver, GlobOverLibcMatchesHundredsOfFunctions) {
  auto sites = resolve("c:str*");
  ASSERT_TRUE(sites) << sites.error().message();
  EXPECT_GE(sites->size(), 50u);
  auto wide = resolve("c:*");
  ASSERT_TRUE(wide) << wide.error().message();
  EXPECT_GE(wide->size(), 200u);
  std::set<uint64_t> offsets;
  for (const auto& site : *wide) offsets.insert(site.file_offset);
  EXPECT_EQ(offsets.size(), wide->size()) << "aliases are folded";
}

TEST(Resolver, LibraryThatIsNotFoundIsBadInput) {
  auto sites = resolve("libno-such-library-xyz:f");
  ASSERT_FALSE(sites);
  EXPECT_EQ(sites.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(sites.error().message().find("libno-such-library-xyz"), std::string::npos);
}

TEST(Resolver, LibraryOfAProcessByNameAndOwnLibraryDirectory) {
  testing::WaitingProcess process({SYMFIX_USES_LIB});
  ASSERT_TRUE(process.ready());
  ResolveOptions options;
  options.pid = process.pid();
  auto sites = resolve("symfix:symfix_lib_*", options);
  ASSERT_TRUE(sites) << sites.error().message();
  // symfix_lib_pick is an IFUNC of a library this process has not loaded: skipped.
  EXPECT_EQ(symbols_of(*sites),
            (std::set<std::string>{"symfix_lib_work", "symfix_lib_other", "symfix_lib_pick_impl"}));
  EXPECT_EQ(sites->front().binary, real(SYMFIX_LIB));

  // Without a pid, found the way the loader would, in the library directories.
  SearchPaths paths;
  paths.loader_cache = "/nonexistent/ld.so.cache";
  const std::string library = SYMFIX_LIB;
  paths.library_dirs = {library.substr(0, library.rfind('/'))};
  auto by_name = resolve("libsymfix.so.1:symfix_lib_work", {}, false, paths);
  ASSERT_TRUE(by_name) << by_name.error().message();
  EXPECT_EQ(by_name->front().binary, real(SYMFIX_LIB));
  EXPECT_TRUE(code_starts_with_endbr64(by_name->front()));
}

TEST(Resolver, LibcIfuncResolvesToTheImplementationTheLoaderPicked) {
  auto sites = resolve("c:strlen");
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  auto libc = ElfFile::open(sites->front().binary);
  ASSERT_TRUE(libc);
  for (const auto& symbol : libc->symbols()) {
    if (symbol.name == "strlen") {
      EXPECT_TRUE(symbol.ifunc);
      EXPECT_NE(sites->front().address, symbol.address) << "not the IFUNC resolver";
    }
  }
  // This process calls the same implementation: its address in our libc
  // (asked of libc itself: a sanitizer may interpose its own strlen).
  void* libc_here = dlopen(sites->front().binary.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(libc_here, nullptr);
  void* strlen_here = dlsym(libc_here, "strlen");
  Dl_info info;
  ASSERT_NE(dladdr(strlen_here, &info), 0);
  dlclose(libc_here);
  EXPECT_EQ(sites->front().address,
            reinterpret_cast<uint64_t>(strlen_here) - reinterpret_cast<uint64_t>(info.dli_fbase));
}

TEST(Resolver, IfuncOfALibraryNotLoadedHereIsRefusedThenResolvedOnceLoaded) {
  SearchPaths paths;
  const std::string library = SYMFIX_LIB;
  paths.library_dirs = {library.substr(0, library.rfind('/'))};
  auto refused = resolve("symfix:symfix_lib_pick", {}, false, paths);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(refused.error().message().find("IFUNC"), std::string::npos);

  void* handle = dlopen(SYMFIX_LIB, RTLD_NOW);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto resolved = resolve("symfix:symfix_lib_pick", {}, false, paths);
  auto implementation = resolve("symfix:symfix_lib_pick_impl", {}, false, paths);
  dlclose(handle);
  ASSERT_TRUE(resolved) << resolved.error().message();
  ASSERT_TRUE(implementation) << implementation.error().message();
  EXPECT_EQ(resolved->front().address, implementation->front().address);
  EXPECT_EQ(resolved->front().file_offset, implementation->front().file_offset);
  EXPECT_EQ(resolved->front().symbol, "symfix_lib_pick");
}

// --- listing ----------------------------------------------------------------

TEST(ListFunctions, ListsMatchesWithAddressSizeAndRefusals) {
  ElfSymbolResolver resolver;
  const std::vector<TargetSpec> specs = {*parse_target(std::string(SYMFIX_PIE_CET) + ":*o*", false),
                                         *parse_target("c:malloc", false)};
  ResolveOptions options;
  options.max_matches = 1;  // listing attaches nothing: no limit
  auto listed = list_functions(resolver, specs, options);
  ASSERT_TRUE(listed) << listed.error().message();
  const auto find = [&](const std::string& name) -> const ListedFunction* {
    for (const auto& function : *listed) {
      if (function.symbol == name) return &function;
    }
    return nullptr;
  };
  const ListedFunction* slow_op = find("slow_op");
  ASSERT_NE(slow_op, nullptr);
  EXPECT_EQ(slow_op->binary, real(SYMFIX_PIE_CET));
  EXPECT_GT(slow_op->size, 0u);
  EXPECT_GT(slow_op->address, 0u);
  EXPECT_EQ(slow_op->refused_reason, "");
  const ListedFunction* zero = find("zero_size_function");
  ASSERT_NE(zero, nullptr);
  EXPECT_NE(zero->refused_reason, "");
  ASSERT_NE(find("malloc"), nullptr);
}

}  // namespace
}  // namespace funclatency
