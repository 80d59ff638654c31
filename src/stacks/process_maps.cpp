// Parses /proc/PID/maps for the stack resolver (see process_maps.h).
#include "stacks/process_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "common/unique_fd.h"

namespace funclatency {

namespace {

// Takes the next field (up to a space) off `line`, skipping leading spaces.
std::string_view next_field(std::string_view& line) {
  const size_t begin = line.find_first_not_of(' ');
  if (begin == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(begin);
  const size_t end = std::min(line.find(' '), line.size());
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end);
  return field;
}

bool parse_hex(std::string_view text, uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool parse_decimal(std::string_view text, uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

// "start-end perms offset dev inode   path", the path possibly with spaces.
std::optional<MemoryMapping> parse_line(std::string_view line) {
  MemoryMapping mapping;
  const std::string_view range = next_field(line);
  const std::string_view permissions = next_field(line);
  const std::string_view offset = next_field(line);
  const std::string_view device = next_field(line);
  const std::string_view inode = next_field(line);
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos || !parse_hex(range.substr(0, dash), mapping.start) ||
      !parse_hex(range.substr(dash + 1), mapping.end) || mapping.end <= mapping.start) {
    return std::nullopt;
  }
  if (permissions.size() < 4 || !parse_hex(offset, mapping.file_offset) || device.empty() ||
      !parse_decimal(inode, mapping.inode)) {
    return std::nullopt;
  }
  mapping.executable = permissions[2] == 'x';
  const size_t path_start = line.find_first_not_of(' ');
  if (path_start != std::string_view::npos) mapping.path = line.substr(path_start);
  return mapping;
}

}  // namespace

std::vector<MemoryMapping> parse_process_maps(std::string_view text) {
  std::vector<MemoryMapping> maps;
  while (!text.empty()) {
    const size_t newline = std::min(text.find('\n'), text.size());
    if (auto mapping = parse_line(text.substr(0, newline))) maps.push_back(std::move(*mapping));
    text.remove_prefix(std::min(newline + 1, text.size()));
  }
  std::ranges::sort(maps, {}, &MemoryMapping::start);
  return maps;
}

Result<std::vector<MemoryMapping>> read_process_maps(const std::string& proc_root, int pid) {
  const std::string path = proc_root + "/" + std::to_string(pid) + "/maps";
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    return runtime_error("read " + path, err);
  }
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t count = ::read(fd.get(), buffer, sizeof buffer);
    if (count < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return runtime_error("read " + path, err);
    }
    if (count == 0) break;
    text.append(buffer, static_cast<size_t>(count));
  }
  // An exited process leaves an empty file where it was a zombie.
  if (text.empty()) return runtime_error("read " + path + ": empty (the process has exited)");
  return parse_process_maps(text);
}

const MemoryMapping* find_mapping(const std::vector<MemoryMapping>& maps, uint64_t address) {
  auto after = std::ranges::upper_bound(maps, address, {}, &MemoryMapping::start);
  if (after == maps.begin()) return nullptr;
  const MemoryMapping& candidate = *std::prev(after);
  return address < candidate.end ? &candidate : nullptr;
}

}  // namespace funclatency
