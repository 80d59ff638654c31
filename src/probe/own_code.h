// Where a function of funclatency's own code lies in its file, found from the
// function's address in this process. The calibration and the uprobe warm-up
// probe funclatency's own functions; the package strips the binary
// (CPACK_STRIP_FILES), so they cannot be found by name in a symbol table. The
// loader's program headers (the PT_LOAD segment that holds the address) say
// which file it came from and at which offset, with or without symbols.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"
#include "symbols/probe_site.h"

namespace funclatency {

struct OwnCode {
  // The loaded object that holds the code: its path as the loader knows it,
  // or the kernel's link to the executable (kOwnExecutableLink) for the
  // main program, which opens the running file even if it was replaced.
  std::string path;
  uint64_t file_offset = 0;  // where the code lies in that file
  uint64_t address = 0;      // its link-time address (what a symbol's st_value says)
};

// Locates the code at `code` (a function's runtime address).
Result<OwnCode> locate_own_code(const void* code);

// A probe site for `size` bytes of funclatency's own code at `code`, named
// `name` in messages: what the resolver would return for the function had
// the binary kept its symbols.
Result<ProbeSite> own_probe_site(const void* code, uint64_t size, const std::string& name);

}  // namespace funclatency
