// Separate debug files for stripped binaries, found where gdb looks for them.
#pragma once

#include <optional>

#include "symbols/elf_file.h"
#include "symbols/search_paths.h"

namespace funclatency {

// The debug file of `binary` with a symbol table, looked up by build-id
// (<root>/.build-id/xx/rest.debug) and then by .gnu_debuglink (next to the
// binary, in its .debug/ subdirectory, and under <root>/<binary's directory>).
// A candidate counts only when its build-id (or, lacking one, the
// debuglink CRC) matches the binary.
std::optional<ElfFile> find_debug_file(const ElfFile& binary, const SearchPaths& paths);

}  // namespace funclatency
