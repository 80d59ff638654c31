// Turning the BINARY part of a target into the absolute path of an ELF file.
#pragma once

#include <optional>
#include <string>

#include "common/error.h"
#include "symbols/search_paths.h"

namespace funclatency {

// `binary` is:
//   ""                    the executable of `pid` (a pid is required then);
//   a path ("./app")      made absolute, symlinks resolved;
//   a name ("app", "c", "libssl.so.3")
//                         with `pid`: a file the process has mapped with that
//                         name (program or library); else a program on PATH
//                         (unless it can only be a library), else a library
//                         found as the dynamic loader would.
// Errors are kBadInput naming what was not found.
Result<std::string> locate_binary(const std::string& binary, std::optional<int> pid,
                                  const SearchPaths& paths);

// True when the BINARY part of a target (a name or path, not "") means the
// file a process has mapped at `mapped_path`: same path, same file name, or
// the library name ("ssl" for ".../libssl.so.3"). With -p, the probe layer
// checks files the process maps later (dlopen) against targets with this.
bool target_names_file(const std::string& binary, const std::string& mapped_path);

// The program `name` on PATH (like execvp), or nothing.
std::optional<std::string> find_on_path(const std::string& name);

}  // namespace funclatency
