#include "process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/unique_fd.h"

namespace funclatency::testing {

namespace {

std::vector<uint8_t> read_at(const std::string& path, uint64_t offset, size_t length) {
  std::vector<uint8_t> bytes(length);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  const ssize_t got = fd ? pread(fd.get(), bytes.data(), length, static_cast<off_t>(offset)) : -1;
  bytes.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return bytes;
}

}  // namespace

std::vector<uint8_t> file_bytes(const std::string& path, uint64_t offset, size_t length) {
  return read_at(path, offset, length);
}

std::vector<uint8_t> mapped_bytes(pid_t pid, const std::string& path, uint64_t offset,
                                  size_t length) {
  const std::string real = std::filesystem::canonical(path).string();
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0, map_offset = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &map_offset,
                    &path_at) < 3 ||
        path_at == 0 || line.substr(static_cast<size_t>(path_at)) != real) {
      continue;
    }
    if (offset < map_offset || offset + length > map_offset + (end - start)) continue;
    return read_at("/proc/" + std::to_string(pid) + "/mem", start + (offset - map_offset), length);
  }
  return {};
}

}  // namespace funclatency::testing
