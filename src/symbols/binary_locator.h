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

// The program `name` on PATH (like execvp), or nothing.
std::optional<std::string> find_on_path(const std::string& name);

}  // namespace funclatency
