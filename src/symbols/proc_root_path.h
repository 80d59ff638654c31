// Paths through another process's root directory ("/proc/PID/root/app/x"):
// realpath() follows that magic link and answers with a path in *our* root,
// and the kernel resolves an absolute symlink met after it in our root too.
// So such a path keeps its "/proc/PID/root" prefix, and the part inside is
// resolved here, symlink by symlink, as the process itself would see it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace funclatency {

// A path split at a process's root: "/proc/PID/root" (or
// "/proc/PID/task/TID/root") and the absolute path inside it.
struct ProcRootPath {
  std::string root;    // "/proc/1234/root"
  std::string inside;  // "/app/target-app"; "/" for the root itself
};

// Pure. Splits an absolute path through /proc/PID/root; "//" and "/./" are
// dropped, ".." kept (it is resolved inside the root later). Nothing for any
// other path, /proc/self/root included (that is our own root).
std::optional<ProcRootPath> split_proc_root(std::string_view path);

// `inside` (absolute) with every symlink resolved within the directory open
// at `root_fd`, as a process with that root would resolve it: absolute
// targets start again at the root, ".." stops there. Returns the absolute,
// symlink-free path inside the root. Errors carry the errno (ENOENT, ELOOP).
Result<std::string> resolve_in_root(int root_fd, std::string_view inside);

// realpath() that never leaves a process's root: "/proc/PID/root/..." keeps
// its prefix and has the rest resolved inside that root (resolve_in_root);
// any other path is realpath()'s. Errors carry the errno.
Result<std::string> real_path(const std::string& path);

}  // namespace funclatency
