// A process's memory map as /proc/PID/maps lists it: which file (and which
// part of it) backs an address, so that a stack address can be turned into a
// binary, a file offset and an ELF address. A parser of the text, so that
// tests can feed it lines, and a reader of the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace funclatency {

struct MemoryMapping {
  static constexpr std::string_view kDeletedSuffix = " (deleted)";

  uint64_t start = 0;  // [start, end)
  uint64_t end = 0;
  uint64_t file_offset = 0;  // of `start` in the file
  bool executable = false;
  uint64_t inode = 0;  // 0: not backed by a file
  // As the process knows it: "/usr/lib/x86_64-linux-gnu/libc.so.6", a
  // special mapping ("[vdso]", "[uprobes]", "[stack]"), or "" (anonymous).
  // A deleted file keeps the " (deleted)" the kernel appends.
  std::string path;

  // Backed by a file (which may since have been deleted).
  bool is_file() const { return inode != 0 && path.starts_with('/'); }
  bool is_deleted() const { return path.ends_with(kDeletedSuffix); }
  // The path without " (deleted)".
  std::string_view file_path() const {
    return std::string_view(path).substr(0,
                                         path.size() - (is_deleted() ? kDeletedSuffix.size() : 0));
  }
  bool operator==(const MemoryMapping&) const = default;
};

// Parses the text of /proc/PID/maps; malformed lines are skipped. The result
// is sorted by address (the kernel lists it that way).
std::vector<MemoryMapping> parse_process_maps(std::string_view text);

// Reads <proc_root>/PID/maps. kRuntime with errno when it cannot be read (the
// process has exited, or we may not look at it).
Result<std::vector<MemoryMapping>> read_process_maps(const std::string& proc_root, int pid);

// The mapping holding `address` in a sorted list, if any. The kernel never
// lists overlapping mappings; where a list has them, only the last mapping
// starting at or below `address` is looked at.
const MemoryMapping* find_mapping(const std::vector<MemoryMapping>& maps, uint64_t address);

}  // namespace funclatency
