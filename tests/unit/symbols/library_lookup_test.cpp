#include "symbols/library_lookup.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

namespace funclatency {
namespace {

TEST(LibraryNameMatches, UserNamesAgainstFileNames) {
  EXPECT_TRUE(library_name_matches("c", "libc.so.6"));
  EXPECT_TRUE(library_name_matches("libc", "libc.so.6"));
  EXPECT_TRUE(library_name_matches("libc.so.6", "libc.so.6"));
  EXPECT_TRUE(library_name_matches("libssl.so", "libssl.so.3"));
  EXPECT_TRUE(library_name_matches("ssl", "libssl.so"));
  EXPECT_TRUE(library_name_matches("ld-linux-x86-64", "ld-linux-x86-64.so.2"));
  EXPECT_FALSE(library_name_matches("c", "libcrypto.so.3"));
  EXPECT_FALSE(library_name_matches("libc", "libc_malloc_debug.so.0"));
  EXPECT_FALSE(library_name_matches("libssl.so.3", "libssl.so.1.1"));
  EXPECT_FALSE(library_name_matches("c", "c"));
  EXPECT_FALSE(library_name_matches("", "libc.so.6"));
}

TEST(LoaderCache, SystemCacheListsLibc) {
  auto entries = read_loader_cache("/etc/ld.so.cache");
  ASSERT_TRUE(entries) << entries.error().message();
  bool found = false;
  for (const auto& entry : *entries) {
    if (entry.soname == "libc.so.6" && entry.flags == 0x0303) {
      found = true;
      EXPECT_TRUE(entry.path.ends_with("/libc.so.6")) << entry.path;
    }
  }
  EXPECT_TRUE(found);
}

// Writes a cache in the "glibc-ld.so.cache1.1" layout: 48-byte header,
// 24-byte entries, strings with offsets from the header's start.
std::string write_cache(const std::string& name, bool with_old_table,
                        const std::vector<std::pair<std::string, std::string>>& libraries,
                        int32_t flags = 0x0303) {
  std::string out;
  if (with_old_table) {
    out += std::string("ld.so-1.7.0") + '\0';
    const uint32_t none = 0;
    out.append(reinterpret_cast<const char*>(&none), 4);
    while (out.size() % 8 != 0) out += '\0';
  }
  const size_t base = out.size();
  std::string header = "glibc-ld.so.cache1.1";
  const uint32_t count = static_cast<uint32_t>(libraries.size());
  header.append(reinterpret_cast<const char*>(&count), 4);
  header.append(24, '\0');  // len_strings, flags, extension offset, unused
  std::string strings;
  const size_t strings_start = header.size() + libraries.size() * 24;
  std::string entries;
  for (const auto& [soname, path] : libraries) {
    const uint32_t key = static_cast<uint32_t>(strings_start + strings.size());
    strings += soname + '\0';
    const uint32_t value = static_cast<uint32_t>(strings_start + strings.size());
    strings += path + '\0';
    char entry[24] = {};
    std::memcpy(entry, &flags, 4);
    std::memcpy(entry + 4, &key, 4);
    std::memcpy(entry + 8, &value, 4);
    entries.append(entry, sizeof entry);
  }
  out += header + entries + strings;
  (void)base;
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << out;
  return path;
}

TEST(LoaderCache, ReadsNewFormatAloneAndAfterTheOldTable) {
  for (const bool with_old_table : {false, true}) {
    const std::string path =
        write_cache("cache-" + std::to_string(with_old_table), with_old_table,
                    {{"libfoo.so.2", "/opt/foo/libfoo.so.2"}, {"libbar.so", "/opt/libbar.so"}});
    auto entries = read_loader_cache(path);
    ASSERT_TRUE(entries) << entries.error().message();
    ASSERT_EQ(entries->size(), 2u);
    EXPECT_EQ((*entries)[0].soname, "libfoo.so.2");
    EXPECT_EQ((*entries)[0].path, "/opt/foo/libfoo.so.2");
    EXPECT_EQ((*entries)[1].path, "/opt/libbar.so");
    EXPECT_EQ((*entries)[1].flags, 0x0303);
  }
}

TEST(LoaderCache, OtherFilesAreErrors) {
  const std::string path = ::testing::TempDir() + "/not-a-cache";
  std::ofstream(path) << "hello";
  EXPECT_FALSE(read_loader_cache(path));
  EXPECT_FALSE(read_loader_cache("/nonexistent/ld.so.cache"));
  // A cache that claims more entries than it holds.
  std::string truncated = "glibc-ld.so.cache1.1";
  const uint32_t count = 1000;
  truncated.append(reinterpret_cast<const char*>(&count), 4);
  truncated.append(24, '\0');
  const std::string short_path = ::testing::TempDir() + "/short-cache";
  std::ofstream(short_path, std::ios::binary) << truncated;
  auto entries = read_loader_cache(short_path);
  ASSERT_FALSE(entries);
  EXPECT_NE(entries.error().message().find("malformed"), std::string::npos);
}

TEST(FindLibrary, UsesTheCacheThenTheDirectories) {
  SearchPaths paths;
  paths.loader_cache =
      write_cache("cache-libc", false, {{"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}});
  paths.library_dirs = {};
  auto from_cache = find_library("c", paths);
  ASSERT_TRUE(from_cache) << from_cache.error().message();
  EXPECT_TRUE(from_cache->ends_with("libc.so.6")) << *from_cache;

  // An entry for another architecture is not used.
  paths.loader_cache = write_cache("cache-other-arch", false,
                                   {{"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}}, 0x0003);
  EXPECT_FALSE(find_library("c", paths));
  paths.library_dirs = {"/lib/x86_64-linux-gnu"};
  auto from_directory = find_library("libc", paths);
  ASSERT_TRUE(from_directory) << from_directory.error().message();
  EXPECT_TRUE(from_directory->ends_with("libc.so.6")) << *from_directory;
}

TEST(FindLibrary, SkipsLinkerScripts) {
  // Debian's /usr/lib/x86_64-linux-gnu/libc.so is a text linker script.
  SearchPaths paths;
  paths.loader_cache = "/nonexistent";
  paths.library_dirs = {"/usr/lib/x86_64-linux-gnu"};
  auto found = find_library("libc.so", paths);
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_TRUE(found->ends_with("libc.so.6")) << *found;
}

}  // namespace
}  // namespace funclatency
