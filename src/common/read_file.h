// Reading a whole small file (a configuration, a PEM certificate or key)
// into memory: one way for every such file, so each reports a failure alike.
// The caller words the error, since only it knows which option named the file.
#pragma once

#include <cerrno>
#include <expected>
#include <fstream>
#include <sstream>
#include <string>

namespace funclatency {

// The file's bytes, or the errno of the open or read that failed.
inline std::expected<std::string, int> read_whole_file(const std::string& path) {
  errno = 0;
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::unexpected(errno);
  std::ostringstream content;
  content << file.rdbuf();
  if (file.bad()) return std::unexpected(errno);
  return content.str();
}

}  // namespace funclatency
