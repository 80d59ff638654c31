// What /proc says about a process's files: its executable, the files it has
// mapped, and the root its paths are relative to.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"

namespace funclatency {

// kBadInput "no process with PID N" when there is none.
Result<void> require_process(int pid);

// "" when the process sees the same files as we do (same root, same mount
// namespace); "/proc/PID/root" when it lives in another mount namespace (a
// container, or `unshare -m` with mounts only it sees) or under another root,
// to prefix its paths with: the kernel resolves the rest in its namespace.
std::string process_root_prefix(int pid);

// The path process `pid` knows a file by, for a path we open it by: the
// prefix process_root_prefix(pid) taken off, and /proc/PID/exe read. What
// users read (and a label that survives restarts); other paths are returned
// as they are.
std::string path_in_process(int pid, const std::string& openable);

// Path of the process's executable, openable by us.
Result<std::string> process_executable(int pid);

// Paths (as the process sees them) of the files it has mapped executable, in
// the order of /proc/PID/maps, each once. Deleted files are left out.
Result<std::vector<std::string>> executable_mappings(int pid);

}  // namespace funclatency
