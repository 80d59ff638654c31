// Finding a shared library by the name a user writes ("c", "libc",
// "libssl.so.3") the way the dynamic loader does: /etc/ld.so.cache, then the
// standard directories.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "symbols/search_paths.h"

namespace funclatency {

struct LoaderCacheEntry {
  std::string soname;  // "libc.so.6"
  std::string path;    // "/lib/x86_64-linux-gnu/libc.so.6"
  int32_t flags = 0;   // ELF class/ABI bits; 0x0303 is an x86-64 libc6 library
};

// Entries of a "glibc-ld.so.cache1.1" file (alone or after the old
// "ld.so-1.7.0" table), in file order. A file in neither format is an error.
Result<std::vector<LoaderCacheEntry>> read_loader_cache(const std::string& path);

// True when the file name `file_name` (a basename) is the library a user
// means by `wanted`: "c" and "libc" match "libc.so.6"; "libssl.so" matches
// "libssl.so.3"; "libssl.so.3" matches itself.
bool library_name_matches(std::string_view wanted, std::string_view file_name);

// True when `name` can only mean a library (starts with "lib" or has ".so").
bool looks_like_library(std::string_view name);

// Absolute, symlink-free path of the library `wanted`, looked up in the
// loader cache and then in the standard directories, all under `root`
// (empty, or "/proc/PID/root" for a process in another mount namespace).
// Not found: kBadInput saying where it looked.
Result<std::string> find_library(std::string_view wanted, const SearchPaths& paths,
                                 const std::string& root = {});

}  // namespace funclatency
