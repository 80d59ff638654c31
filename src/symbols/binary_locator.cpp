#include "symbols/binary_locator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "symbols/library_lookup.h"
#include "symbols/proc_root_path.h"
#include "symbols/process_files.h"

namespace funclatency {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat status;
  return stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
}

std::string_view basename_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

Result<std::string> locate_path(const std::string& binary, std::optional<int> pid) {
  // "/proc/PID/root/..." keeps its prefix (real_path resolves inside it).
  const auto path = real_path(binary);
  if (path && is_regular_file(*path)) return *path;
  if (pid && binary.starts_with('/') && !split_proc_root(binary)) {
    // A path as the traced process sees it, inside its container.
    // Its symlinks are resolved inside its root, not ours.
    if (const std::string root = process_root_prefix(*pid); !root.empty()) {
      auto in_root = real_path(root + binary);
      if (in_root && is_regular_file(*in_root)) return *in_root;
    }
  }
  if (path) return bad_input(binary + " is not a regular file");
  return std::unexpected(path.error());
}

// A file the process has mapped whose name is `name` or the library `name`.
Result<std::optional<std::string>> mapped_file_named(const std::string& name, int pid) {
  auto files = executable_mappings(pid);
  if (!files) return std::unexpected(files.error());
  for (const bool library_match : {false, true}) {
    for (const auto& file : *files) {
      const std::string_view base = basename_of(file);
      if (library_match ? library_name_matches(name, base) : base == name) {
        const std::string root = process_root_prefix(pid);
        if (root.empty()) {
          if (auto path = real_path(file)) return std::optional(*path);
        }
        return std::optional(root + file);
      }
    }
  }
  return std::optional<std::string>();
}

}  // namespace

bool target_names_file(const std::string& binary, const std::string& mapped_path) {
  if (binary.empty()) return false;
  if (binary.find('/') != std::string::npos) {
    const auto resolved = real_path(binary);
    const auto mapped = real_path(mapped_path);
    return binary == mapped_path || (resolved && mapped && *resolved == *mapped);
  }
  const std::string_view base = basename_of(mapped_path);
  return base == binary || library_name_matches(binary, base);
}

std::optional<std::string> find_on_path(const std::string& name) {
  const char* search = std::getenv("PATH");
  const std::string_view directories = search != nullptr ? search : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= directories.size()) {
    size_t end = directories.find(':', start);
    if (end == std::string_view::npos) end = directories.size();
    // An empty entry means the current directory, as for execvp.
    const std::string_view directory =
        end > start ? directories.substr(start, end - start) : std::string_view(".");
    const std::string candidate = std::string(directory) + "/" + name;
    if (is_regular_file(candidate) && access(candidate.c_str(), X_OK) == 0) {
      if (auto path = real_path(candidate)) return *path;
      return std::nullopt;
    }
    start = end + 1;
  }
  return std::nullopt;
}

Result<std::string> locate_binary(const std::string& binary, std::optional<int> pid,
                                  const SearchPaths& paths) {
  if (pid) {
    if (auto exists = require_process(*pid); !exists) return std::unexpected(exists.error());
  }
  if (binary.empty()) {
    if (!pid) {
      return bad_input("\":FUNCTION\" names no binary", "add -p PID, or write BINARY:FUNCTION");
    }
    return process_executable(*pid);
  }
  if (binary.find('/') != std::string::npos) return locate_path(binary, pid);

  if (pid) {
    auto mapped = mapped_file_named(binary, *pid);
    if (!mapped) return std::unexpected(mapped.error());
    if (*mapped) return **mapped;
  }
  if (!looks_like_library(binary)) {
    if (auto program = find_on_path(binary)) return *program;
  }
  // A library not (yet) mapped by the process is still found: uprobes on its
  // file fire once the process loads it.
  auto library = find_library(binary, paths, pid ? process_root_prefix(*pid) : std::string());
  if (library) return library;
  if (looks_like_library(binary)) return library;
  return bad_input("no program or library \"" + binary + "\" found",
                   "not on PATH; " + library.error().hint);
}

}  // namespace funclatency
