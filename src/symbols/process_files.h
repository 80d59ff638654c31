// What /proc says about a process's files: its executable, the files it has
// mapped, and the root its paths are relative to.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"

namespace funclatency {

// kBadInput "no process with PID N" when there is none.
Result<void> require_process(int pid);

// "" when the process sees the same root as we do; "/proc/PID/root" when it
// lives in another mount namespace (a container), to prefix its paths with.
std::string process_root_prefix(int pid);

// Path of the process's executable, openable by us.
Result<std::string> process_executable(int pid);

// Paths (as the process sees them) of the files it has mapped executable, in
// the order of /proc/PID/maps, each once. Deleted files are left out.
Result<std::vector<std::string>> executable_mappings(int pid);

}  // namespace funclatency
