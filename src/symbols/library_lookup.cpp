#include "symbols/library_lookup.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "symbols/proc_root_path.h"

namespace funclatency {
namespace {

// Facts of glibc's ldconfig cache format (sysdeps/generic/dl-cache.h).
constexpr std::string_view kOldCacheMagic = "ld.so-1.7.0";
constexpr std::string_view kNewCacheMagic = "glibc-ld.so.cache1.1";
constexpr size_t kOldHeaderSize = 16;  // magic[11], padding, uint32 nlibs
constexpr size_t kOldEntrySize = 12;   // int32 flags, uint32 key, uint32 value
constexpr size_t kNewHeaderSize = 48;  // magic+version[20], nlibs, len_strings, flags, ...
constexpr size_t kNewEntrySize = 24;   // int32 flags, uint32 key, value, osversion, uint64 hwcap
constexpr size_t kNewHeaderAlignment = 8;
constexpr int32_t kFlagTypeMask = 0x00ff;
constexpr int32_t kFlagElfLibc6 = 0x0003;
constexpr int32_t kFlagRequiredMask = 0xff00;
#if defined(__x86_64__)
constexpr int32_t kFlagThisArchitecture = 0x0300;  // FLAG_X8664_LIB64
#elif defined(__aarch64__)
constexpr int32_t kFlagThisArchitecture = 0x0a00;  // FLAG_AARCH64_LIB64
#else
constexpr int32_t kFlagThisArchitecture = -1;  // accept any
#endif

uint32_t read_u32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

std::optional<std::string> string_at(const std::string& bytes, size_t base, uint32_t offset) {
  const size_t start = base + offset;
  if (start >= bytes.size()) return std::nullopt;
  const size_t end = bytes.find('\0', start);
  if (end == std::string::npos) return std::nullopt;
  return bytes.substr(start, end - start);
}

bool usable_here(int32_t flags) {
  if ((flags & kFlagTypeMask) != kFlagElfLibc6) return false;
  return kFlagThisArchitecture < 0 || (flags & kFlagRequiredMask) == kFlagThisArchitecture;
}

std::string_view file_name_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_elf_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  return file.read(magic, sizeof magic) && std::memcmp(magic,
                                                       "\x7f"
                                                       "ELF",
                                                       4) == 0;
}

// `path` under `root`, its symlinks resolved inside that root (a
// container's "/usr/lib/libz.so.1" may point at "/usr/lib/libz.so.1.2.13").
std::optional<std::string> resolved_path(const std::string& path, const std::string& root) {
  auto resolved = real_path(root + path);
  if (!resolved || !is_elf_file(*resolved)) return std::nullopt;
  return *resolved;
}

// Prefers the name the user wrote exactly, then the order found.
std::optional<std::string> best_candidate(std::string_view wanted,
                                          const std::vector<std::string>& candidates,
                                          const std::string& root) {
  std::vector<std::string> ordered;
  for (const auto& candidate : candidates) {
    if (file_name_of(candidate) == wanted) ordered.push_back(candidate);
  }
  for (const auto& candidate : candidates) {
    if (file_name_of(candidate) != wanted) ordered.push_back(candidate);
  }
  for (const auto& candidate : ordered) {
    if (auto path = resolved_path(candidate, root)) return path;
  }
  return std::nullopt;
}

std::vector<std::string> directory_matches(std::string_view wanted, const std::string& directory,
                                           const std::string& root) {
  std::vector<std::string> found;
  DIR* listing = opendir((root + directory).c_str());
  if (listing == nullptr) return found;
  while (const dirent* entry = readdir(listing)) {
    if (library_name_matches(wanted, entry->d_name))
      found.push_back(directory + "/" + entry->d_name);
  }
  closedir(listing);
  // Versioned names ("libz.so.1") are the runtime files; "libz.so" may be a
  // development symlink or a linker script. Longer names sort first.
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  return found;
}

}  // namespace

Result<std::vector<LoaderCacheEntry>> read_loader_cache(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return bad_input("cannot read the loader cache " + path, {}, errno);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto malformed = [&] { return bad_input("malformed loader cache " + path); };

  size_t new_start = 0;
  if (bytes.starts_with(kOldCacheMagic)) {
    if (bytes.size() < kOldHeaderSize) return malformed();
    const uint64_t old_entries = read_u32(bytes, kOldCacheMagic.size() + 1);
    const uint64_t old_end = kOldHeaderSize + old_entries * kOldEntrySize;
    new_start = (old_end + kNewHeaderAlignment - 1) & ~uint64_t{kNewHeaderAlignment - 1};
  }
  if (new_start > bytes.size() ||
      bytes.compare(new_start, kNewCacheMagic.size(), kNewCacheMagic) != 0) {
    return bad_input("the loader cache " + path + " is not in the \"" +
                     std::string(kNewCacheMagic) + "\" format");
  }
  if (bytes.size() - new_start < kNewHeaderSize) return malformed();
  const uint64_t entry_count = read_u32(bytes, new_start + kNewCacheMagic.size());
  const size_t entries_start = new_start + kNewHeaderSize;
  if (entry_count > (bytes.size() - entries_start) / kNewEntrySize) return malformed();

  std::vector<LoaderCacheEntry> entries;
  entries.reserve(entry_count);
  for (uint64_t i = 0; i < entry_count; ++i) {
    const size_t entry = entries_start + i * kNewEntrySize;
    int32_t flags = 0;
    std::memcpy(&flags, bytes.data() + entry, sizeof flags);
    auto soname = string_at(bytes, new_start, read_u32(bytes, entry + 4));
    auto library_path = string_at(bytes, new_start, read_u32(bytes, entry + 8));
    if (!soname || !library_path) return malformed();
    entries.push_back(LoaderCacheEntry{std::move(*soname), std::move(*library_path), flags});
  }
  return entries;
}

bool looks_like_library(std::string_view name) {
  return name.starts_with("lib") || name.find(".so") != std::string_view::npos;
}

bool library_name_matches(std::string_view wanted, std::string_view file_name) {
  if (wanted.empty()) return false;
  const auto is_name_or_versioned = [&](std::string_view stem) {
    return file_name == stem ||
           (file_name.size() > stem.size() + 1 && file_name.starts_with(stem) &&
            file_name[stem.size()] == '.' &&
            std::isdigit(static_cast<unsigned char>(file_name[stem.size() + 1])));
  };
  if (wanted.find(".so") != std::string_view::npos) return is_name_or_versioned(wanted);
  const std::string with_suffix = std::string(wanted) + ".so";
  if (is_name_or_versioned(with_suffix)) return true;
  return !wanted.starts_with("lib") && is_name_or_versioned("lib" + with_suffix);
}

Result<std::string> find_library(std::string_view wanted, const SearchPaths& paths,
                                 const std::string& root) {
  std::string cache_problem;
  if (auto cache = read_loader_cache(root + paths.loader_cache)) {
    std::vector<std::string> candidates;
    for (const auto& entry : *cache) {
      if (usable_here(entry.flags) && library_name_matches(wanted, entry.soname)) {
        candidates.push_back(entry.path);
      }
    }
    if (auto found = best_candidate(wanted, candidates, root)) return *found;
  } else {
    cache_problem = "; " + cache.error().message();
  }
  std::string searched;
  for (const auto& directory : paths.library_dirs) {
    if (auto found = best_candidate(wanted, directory_matches(wanted, directory, root), root)) {
      return *found;
    }
    searched += (searched.empty() ? "" : ", ") + directory;
  }
  return bad_input("no library \"" + std::string(wanted) + "\" found",
                   "looked in " + paths.loader_cache + " and " + searched + cache_problem +
                       "; give its path instead");
}

}  // namespace funclatency
