// Reads what tracing a Go program needs from its ELF file without debug
// information: the Go version (.go.buildinfo), the functions listed in the
// pclntab (which survives `-ldflags=-s -w`), and where runtime.g keeps the
// goroutine id for that version. The byte parsers take spans so that they
// can be tested on synthetic tables; a malformed table is an Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "symbols/elf_file.h"

namespace funclatency {

struct GoVersion {
  std::string text;  // as the toolchain wrote it: "go1.19.8", "devel go1.23-1a2b3c4 ..."
  int major = 0;     // 1 for "go1.19.8"; 0 (and minor 0) when text names no release
  int minor = 0;     // 19 for "go1.19.8"
};

struct GoFunction {
  std::string name;      // Go's own: "net/http.(*conn).serve", "main.main.func1"
  uint64_t address = 0;  // entry, a link-time virtual address (like st_value)
  // The function's code, as its pc-value table covers it (what .symtab's
  // st_size says); without that table, up to the next function's entry.
  uint64_t size = 0;
};

struct GoBinary {
  GoVersion version;
  std::optional<uint32_t> goid_offset;  // nothing for versions we do not support
  // In address order. A name can be listed twice: Go's ABI wrappers
  // (ABI0 <-> ABIInternal) carry the name of the function they wrap, where
  // .symtab calls the ABI0 one "NAME.abi0".
  std::vector<GoFunction> functions;
};

// Reads `count` bytes at a virtual address of the file (fewer or none when
// the file does not hold them); resolves the pointers of old buildinfo blobs.
using GoAddressReader = std::function<std::span<const uint8_t>(uint64_t address, size_t count)>;

// "go1.19.8" -> {text, 1, 19}; also "go1.21rc2", "go1.22.0 X:exp", "devel go1.23-abc ...".
// Text that names no release keeps major and minor at 0.
GoVersion parse_go_version(std::string_view text);

// The offset of `goid` in runtime.g, or nothing for versions before 1.17
// (and unknown versions).
std::optional<uint32_t> go_goid_offset(int major, int minor);

// Parses a .go.buildinfo blob (starting with "\xff Go buildinf:"). Go >= 1.18
// stores the version inline; older versions store a pointer to a Go string
// header, resolved through `read`. `what` names the file in errors.
Result<GoVersion> parse_go_buildinfo(std::span<const uint8_t> blob, const GoAddressReader& read,
                                     std::string_view what);

// Parses a pclntab (formats of Go 1.16-1.17, 1.18-1.19 and 1.20+,
// little-endian 64-bit). `what` names the file in errors.
Result<std::vector<GoFunction>> parse_go_pclntab(std::span<const uint8_t> table,
                                                 std::string_view what);

// The Go facts of an ELF file: nothing when it is not a Go binary (no
// .go.buildinfo and no pclntab section); an Error when it is one whose
// tables are missing or malformed.
Result<std::optional<GoBinary>> read_go_binary(const ElfFile& file);

// True when read_go_binary would not say "nothing": the file has
// .go.buildinfo or a pclntab section. Looks at section names only.
bool has_go_sections(const ElfFile& file);

}  // namespace funclatency
