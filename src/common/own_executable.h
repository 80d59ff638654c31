// funclatency's own executable: the calibration traces functions in it, the
// uprobe warm-up attaches to it, and exporter modules are found next to it.
// One way of finding it, so they all name the same file.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/error.h"

namespace funclatency {

// The kernel's link to the running executable (a path that opens it even
// when it was replaced or deleted since).
inline constexpr const char* kOwnExecutableLink = "/proc/self/exe";

// The executable's path, as the kernel resolves kOwnExecutableLink.
inline Result<std::string> own_executable() {
  std::string path(4096, '\0');
  ssize_t length = readlink(kOwnExecutableLink, path.data(), path.size());
  if (length < 0) return runtime_error("find funclatency's own executable", errno);
  if (length == 0 || static_cast<size_t>(length) >= path.size()) {
    return runtime_error("find funclatency's own executable", ENAMETOOLONG);
  }
  path.resize(static_cast<size_t>(length));
  return path;
}

}  // namespace funclatency
