// A file's bytes as the file holds them and as a running process that maps
// it sees them (through /proc/PID/mem): a uprobe shows as an int3 (0xcc) in
// the process's copy only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace funclatency::testing {

inline constexpr uint8_t kInt3 = 0xcc;

// `length` bytes at `offset` of the file at `path`; fewer at its end.
std::vector<uint8_t> file_bytes(const std::string& path, uint64_t offset, size_t length);

// The same bytes in process `pid`'s mapping of that file; empty when the
// process does not map that part of the file.
std::vector<uint8_t> mapped_bytes(pid_t pid, const std::string& path, uint64_t offset,
                                  size_t length);

}  // namespace funclatency::testing
