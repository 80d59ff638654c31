// What symbol lookup produces and the probe layer consumes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "symbols/elf_file.h"

namespace funclatency {

// A TARGET argument, parsed: "BINARY:FUNCTION", "lib:FUNCTION", ":FUNCTION".
struct TargetSpec {
  std::string binary;    // path, program name, library name, or empty (":FUNCTION" with -p)
  std::string function;  // a name or a glob pattern (or a regex when `regex`)
  bool regex = false;
};

// A function of Go code (listed in its file's .gopclntab): its calls are
// paired per goroutine and end at its ret instructions.
struct GoCode {
  std::string version;       // as .go.buildinfo says, e.g. "go1.19.8"
  int major = 0, minor = 0;  // 1, 19
  uint32_t goid_offset = 0;  // offset of goid in runtime.g for that version
};

// One function to probe. Where its probes go is the planner's decision
// (src/probe/probe_plan.h), not the resolver's.
struct ProbeSite {
  // Absolute path of the ELF file that holds the code, as the traced process
  // knows it (inside its container): the name reports show.
  std::string binary;
  std::string symbol;        // the name users read (demangled for C++)
  std::string raw_symbol;    // the name in the symbol table (mangled)
  uint64_t address = 0;      // st_value
  uint64_t size = 0;         // st_size
  uint64_t file_offset = 0;  // file offset of st_value, what uprobes attach at
  std::optional<GoCode> go;  // set for Go code
  // The mapped file the code is read from, shared with the resolver so the
  // planner does not read it again; null when the site was made by hand.
  std::shared_ptr<const ElfFile> file;
  // The path funclatency opens and attaches probes to when `binary` cannot be
  // (a file in another mount namespace: "/proc/PID/root/app/bin/server");
  // empty when it is `binary`.
  std::string attach_path;

  const std::string& openable_path() const { return attach_path.empty() ? binary : attach_path; }
};

struct ResolveOptions {
  std::optional<int> pid;  // resolve names through this process's mappings
  size_t max_matches = 5000;
};

}  // namespace funclatency
