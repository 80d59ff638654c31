// Parses the Go toolchain's own tables in a binary: the buildinfo blob for
// the version and the pclntab for the functions. Every read is bounds-checked
// against the span it comes from; the layouts are those of Go's
// debug/buildinfo, debug/gosym/pclntab.go and runtime/symtab.go.
#include "symbols/go_binary.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

namespace funclatency {

namespace {

constexpr std::string_view kBuildInfoMagic{"\xff Go buildinf:", 14};
constexpr size_t kBuildInfoHeaderSize = 32;
constexpr uint8_t kBuildInfoInlineStrings = 0x2;  // Go >= 1.18: varint-prefixed strings at 32
constexpr uint8_t kBuildInfoBigEndian = 0x1;
constexpr size_t kMaxVersionLength = 1024;

constexpr uint32_t kPclntabMagic12 = 0xfffffffb;   // Go 1.2-1.15
constexpr uint32_t kPclntabMagic116 = 0xfffffffa;  // Go 1.16-1.17
constexpr uint32_t kPclntabMagic118 = 0xfffffff0;  // Go 1.18-1.19
constexpr uint32_t kPclntabMagic120 = 0xfffffff1;  // Go 1.20 and later

// The little-endian unsigned integer of `width` bytes at `offset`, or
// nothing when the span does not hold all of it.
std::optional<uint64_t> read_le(std::span<const uint8_t> bytes, uint64_t offset, size_t width) {
  if (offset > bytes.size() || width > bytes.size() - offset) return std::nullopt;
  uint64_t value = 0;
  for (size_t i = width; i-- > 0;) value = (value << 8) | bytes[offset + i];
  return value;
}

// An unsigned LEB128 varint (Go's binary.Uvarint) at `offset`, which moves
// past it; nothing when it runs off the span or overflows 64 bits.
std::optional<uint64_t> read_uvarint(std::span<const uint8_t> bytes, uint64_t& offset) {
  uint64_t value = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (offset >= bytes.size()) return std::nullopt;
    const uint8_t byte = bytes[offset++];
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return std::nullopt;
}

std::string hex_of(uint64_t value) {
  return fmt::format("{:#x}", value);
}

// ---- buildinfo ----

std::unexpected<Error> bad_buildinfo(std::string_view what, const std::string& problem) {
  return bad_input(std::string(what) + ": malformed Go .go.buildinfo: " + problem,
                   "is the file complete and built by the Go toolchain?");
}

// The version string of a pre-1.18 blob: a pointer to a Go string header
// {data pointer, length}, both resolved through `read`.
Result<std::string> read_version_by_pointer(std::span<const uint8_t> blob,
                                            const GoAddressReader& read, std::string_view what) {
  const uint8_t pointer_size = blob[14];
  if (pointer_size != 4 && pointer_size != 8) {
    return bad_buildinfo(what, "pointer size " + std::to_string(pointer_size));
  }
  if ((blob[15] & kBuildInfoBigEndian) != 0) {
    return bad_input(std::string(what) + " is a big-endian Go binary: not supported");
  }
  const uint64_t header_address = *read_le(blob, 16, pointer_size);
  const std::span<const uint8_t> header = read(header_address, 2 * pointer_size);
  if (header.size() < 2 * size_t{pointer_size}) {
    return bad_buildinfo(
        what, "the version's string header at " + hex_of(header_address) + " is not in the file");
  }
  const uint64_t data_address = *read_le(header, 0, pointer_size);
  const uint64_t length = *read_le(header, pointer_size, pointer_size);
  if (length > kMaxVersionLength) {
    return bad_buildinfo(what, "the version string is " + std::to_string(length) + " bytes long");
  }
  const std::span<const uint8_t> data = read(data_address, static_cast<size_t>(length));
  if (data.size() < length) {
    return bad_buildinfo(what,
                         "the version string at " + hex_of(data_address) + " is not in the file");
  }
  return std::string(data.begin(), data.end());
}

// ---- pclntab ----

// What a pcHeader says, with every offset checked against the table.
struct PclntabHeader {
  bool entry_offsets = false;  // Go 1.18+: functab and _func hold uint32 offsets from text_start
  uint8_t pc_quantum = 1;
  uint64_t function_count = 0;
  uint64_t text_start = 0;
  uint64_t funcname_offset = 0;
  uint64_t pctab_offset = 0;
  uint64_t pcln_offset = 0;  // the functab, then the _func records it points at
  size_t field_size() const { return entry_offsets ? 4 : 8; }
};

std::unexpected<Error> bad_pclntab(std::string_view what, const std::string& problem) {
  return bad_input(std::string(what) + ": malformed Go pclntab: " + problem,
                   "is the file complete and built by the Go toolchain?");
}

Result<PclntabHeader> read_pclntab_header(std::span<const uint8_t> table, std::string_view what) {
  const std::optional<uint64_t> magic = read_le(table, 0, 4);
  if (!magic || table.size() < 8) {
    return bad_pclntab(what, "it is " + std::to_string(table.size()) +
                                 " bytes long, shorter than the 8 bytes that identify it");
  }
  PclntabHeader header;
  switch (*magic) {
    case kPclntabMagic116:
      break;
    case kPclntabMagic118:
    case kPclntabMagic120:
      header.entry_offsets = true;
      break;
    case kPclntabMagic12:
      return bad_input(std::string(what) + " was built by Go 1.2-1.15: not supported",
                       "funclatency supports Go 1.17 and later");
    default:
      if (const uint32_t swapped = std::byteswap(static_cast<uint32_t>(*magic));
          swapped == kPclntabMagic12 || swapped == kPclntabMagic116 ||
          swapped == kPclntabMagic118 || swapped == kPclntabMagic120) {
        return bad_input(std::string(what) + " is a big-endian Go binary: not supported");
      }
      return bad_pclntab(what, "unknown magic " + hex_of(*magic));
  }
  if (table[4] != 0 || table[5] != 0) return bad_pclntab(what, "nonzero header padding");
  header.pc_quantum = table[6];
  if (header.pc_quantum != 1 && header.pc_quantum != 2 && header.pc_quantum != 4) {
    return bad_pclntab(what, "pc quantum " + std::to_string(header.pc_quantum));
  }
  if (table[7] != 8) {
    return bad_input(std::string(what) + " is a Go binary with " + std::to_string(table[7]) +
                     "-byte pointers: only 64-bit Go binaries are supported");
  }
  // The words after the first 8 bytes: nfunc, nfiles, [textStart,]
  // funcnameOffset, cuOffset, filetabOffset, pctabOffset, pclnOffset.
  const size_t word_count = header.entry_offsets ? 8 : 7;
  const size_t header_size = 8 + word_count * 8;
  if (table.size() < header_size) {
    return bad_pclntab(what, "cut off inside its header (" + std::to_string(table.size()) + " of " +
                                 std::to_string(header_size) + " bytes)");
  }
  auto word = [&](size_t index) { return *read_le(table, 8 + index * 8, 8); };
  header.function_count = word(0);
  size_t next = 2;
  if (header.entry_offsets) header.text_start = word(next++);
  header.funcname_offset = word(next);
  header.pctab_offset = word(next + 3);
  header.pcln_offset = word(next + 4);
  for (const auto& [name, offset] : {std::pair{"function name table", header.funcname_offset},
                                     std::pair{"pc-value table", header.pctab_offset},
                                     std::pair{"function table", header.pcln_offset}}) {
    if (offset < header_size || offset >= table.size()) {
      return bad_pclntab(what, std::string("its ") + name + " offset " + hex_of(offset) +
                                   " is outside the table (" + std::to_string(table.size()) +
                                   " bytes)");
    }
  }
  if (header.function_count == 0) return bad_pclntab(what, "it lists no functions");
  // The functab holds function_count (entry, funcoff) pairs and the end of text.
  const uint64_t fields = (table.size() - header.pcln_offset) / header.field_size();
  if (fields == 0 || header.function_count > (fields - 1) / 2) {
    return bad_pclntab(what, "it says it lists " + std::to_string(header.function_count) +
                                 " functions, more than its function table holds");
  }
  if (header.text_start > std::numeric_limits<uint64_t>::max() - 0xffffffffu) {
    return bad_pclntab(what, "text start " + hex_of(header.text_start));
  }
  return header;
}

// The bytes the pc-value table at `offset` covers: the function's code size
// (each entry is a value delta and a pc delta; a zero value delta after the
// first ends it). Fails when it runs off the table or past `limit`.
Result<uint64_t> pc_table_extent(std::span<const uint8_t> table, const PclntabHeader& header,
                                 uint64_t offset, uint64_t limit, std::string_view what,
                                 const std::string& function) {
  uint64_t position = header.pctab_offset + offset;
  if (offset >= table.size() || position >= table.size()) {
    return bad_pclntab(what, "the pc-value table of " + function + " is outside the table");
  }
  uint64_t pc = 0;
  for (bool first = true;; first = false) {
    const std::optional<uint64_t> value_delta = read_uvarint(table, position);
    if (!value_delta) return bad_pclntab(what, "the pc-value table of " + function + " is cut off");
    if (*value_delta == 0 && !first) return pc;
    const std::optional<uint64_t> pc_delta = read_uvarint(table, position);
    if (!pc_delta || *pc_delta > limit) {
      return bad_pclntab(what, "the pc-value table of " + function + " is cut off or too long");
    }
    pc += *pc_delta * header.pc_quantum;
    if (pc > limit) {
      return bad_pclntab(
          what, "the pc-value table of " + function + " runs past the next function's entry");
    }
  }
}

bool looks_like_pclntab_header(std::span<const uint8_t> bytes) {
  const std::optional<uint64_t> magic = read_le(bytes, 0, 4);
  if (!magic || bytes.size() < 8) return false;
  const bool known =
      *magic == kPclntabMagic116 || *magic == kPclntabMagic118 || *magic == kPclntabMagic120;
  return known && bytes[4] == 0 && bytes[5] == 0 &&
         (bytes[6] == 1 || bytes[6] == 2 || bytes[6] == 4) && bytes[7] == 8;
}

// The section's bytes, or an Error when the file does not hold all of them.
Result<std::span<const uint8_t>> whole_section(const ElfFile& file, const ElfSection& section) {
  if (section.bytes.size() != section.size) {
    return bad_input(file.path() + ": section " + section.name +
                     " extends past the end of the file (truncated?)");
  }
  return section.bytes;
}

// The functions, checked to lie in the file's code: a table whose entries do
// not is stale, unrelocated or not a pclntab at all.
Result<std::vector<GoFunction>> parse_pclntab_of(const ElfFile& file,
                                                 std::span<const uint8_t> table) {
  auto functions = parse_go_pclntab(table, file.path());
  if (!functions) return functions;
  for (const GoFunction* function : {&functions->front(), &functions->back()}) {
    if (!file.in_executable_segment(function->address, std::max<uint64_t>(function->size, 1))) {
      return bad_pclntab(file.path(), "function " + function->name + " at " +
                                          hex_of(function->address) +
                                          " is not in an executable segment");
    }
  }
  return functions;
}

// The pclntab: its own section (.gopclntab; .data.rel.ro.gopclntab in
// internally linked PIE), or, when an external linker merged it into
// .data.rel.ro (PIE) and -s dropped the runtime.pclntab symbol, the first
// place there that starts a valid table.
Result<std::vector<GoFunction>> read_pclntab(const ElfFile& file) {
  for (const char* name : {".gopclntab", ".data.rel.ro.gopclntab"}) {
    if (const std::optional<ElfSection> section = file.section(name)) {
      auto table = whole_section(file, *section);
      if (!table) return std::unexpected(table.error());
      return parse_pclntab_of(file, *table);
    }
  }
  std::optional<Error> first_error;
  if (const std::optional<ElfSection> section = file.section(".data.rel.ro")) {
    const std::span<const uint8_t> bytes = section->bytes;
    for (size_t offset = 0; offset + 8 <= bytes.size(); offset += 8) {
      if (!looks_like_pclntab_header(bytes.subspan(offset))) continue;
      auto functions = parse_pclntab_of(file, bytes.subspan(offset));
      if (functions) return functions;
      if (!first_error) first_error = functions.error();
    }
  }
  if (first_error) return std::unexpected(*first_error);
  return bad_input(file.path() +
                       " is a Go binary without a pclntab (no .gopclntab section, "
                       "none found in .data.rel.ro)",
                   "was it post-processed by a packer or an unusual strip tool?");
}

}  // namespace

GoVersion parse_go_version(std::string_view text) {
  GoVersion version{.text = std::string(text)};
  std::string_view rest = text;
  if (rest.starts_with("devel ")) rest.remove_prefix(6);
  if (!rest.starts_with("go")) return version;
  rest.remove_prefix(2);
  int major = 0;
  int minor = 0;
  const char* end = rest.data() + rest.size();
  auto [after_major, major_error] = std::from_chars(rest.data(), end, major);
  if (major_error != std::errc{} || after_major == end || *after_major != '.') return version;
  auto [after_minor, minor_error] = std::from_chars(after_major + 1, end, minor);
  if (minor_error != std::errc{} || major < 1) return version;
  version.major = major;
  version.minor = minor;
  return version;
}

std::optional<uint32_t> go_goid_offset(int major, int minor) {
  // runtime.g: stack (16), stackguard0/1, _panic, _defer, m (8 each), sched
  // (gobuf), syscallsp, syscallpc, [syscallbp,] stktopsp, param,
  // atomicstatus (4), stackLock (4), goid. Go 1.23 added g.syscallbp; Go
  // 1.25 dropped gobuf.ret. The numbers agree with the third-party offset
  // tables (OpenTelemetry Go auto-instrumentation, Pixie, Parca); prefer
  // DWARF runtime.g.goid when the binary has it.
  if (major != 1 || minor < 17) return std::nullopt;
  if (minor <= 22) return 152;
  if (minor <= 24) return 160;
  return 152;
}

Result<GoVersion> parse_go_buildinfo(std::span<const uint8_t> blob, const GoAddressReader& read,
                                     std::string_view what) {
  if (blob.size() < kBuildInfoHeaderSize) {
    return bad_buildinfo(what, "it is " + std::to_string(blob.size()) +
                                   " bytes long, shorter than its 32-byte header");
  }
  if (std::memcmp(blob.data(), kBuildInfoMagic.data(), kBuildInfoMagic.size()) != 0) {
    return bad_buildinfo(what, "it does not start with \"\\xff Go buildinf:\"");
  }
  std::string text;
  if ((blob[15] & kBuildInfoInlineStrings) != 0) {
    uint64_t position = kBuildInfoHeaderSize;
    const std::optional<uint64_t> length = read_uvarint(blob, position);
    if (!length || *length > blob.size() - position) {
      return bad_buildinfo(what, "its version string runs past its end");
    }
    if (*length > kMaxVersionLength) {
      return bad_buildinfo(what,
                           "the version string is " + std::to_string(*length) + " bytes long");
    }
    text.assign(blob.begin() + static_cast<std::ptrdiff_t>(position),
                blob.begin() + static_cast<std::ptrdiff_t>(position + *length));
  } else {
    auto by_pointer = read_version_by_pointer(blob, read, what);
    if (!by_pointer) return std::unexpected(by_pointer.error());
    text = std::move(*by_pointer);
  }
  if (text.empty()) return bad_buildinfo(what, "its Go version is empty");
  return parse_go_version(text);
}

Result<std::vector<GoFunction>> parse_go_pclntab(std::span<const uint8_t> table,
                                                 std::string_view what) {
  auto parsed_header = read_pclntab_header(table, what);
  if (!parsed_header) return std::unexpected(parsed_header.error());
  const PclntabHeader& header = *parsed_header;
  const size_t field = header.field_size();
  const uint64_t functab = header.pcln_offset;
  // functab[i] = {entry, funcoff}; the end of text follows the last pair.
  auto entry = [&](uint64_t index) {
    const uint64_t value = *read_le(table, functab + 2 * index * field, field);
    return header.entry_offsets ? header.text_start + value : value;
  };
  auto function_offset = [&](uint64_t index) {
    return *read_le(table, functab + (2 * index + 1) * field, field);
  };

  std::vector<GoFunction> functions;
  functions.reserve(static_cast<size_t>(header.function_count));
  // _func: entry (uint32 offset in 1.18+, uintptr before), nameoff int32,
  // args int32, deferreturn uint32, pcsp uint32, ...
  const uint64_t record_size = field + 16;
  const uint64_t records_size = table.size() - header.pcln_offset;
  uint64_t next_entry = entry(0);
  for (uint64_t i = 0; i < header.function_count; ++i) {
    const uint64_t address = next_entry;
    next_entry = entry(i + 1);
    auto which = [i] { return "function " + std::to_string(i); };
    if (next_entry < address) {
      return bad_pclntab(what, which() + " at " + hex_of(address) + " is not in address order");
    }
    const uint64_t offset = function_offset(i);
    if (offset > records_size || record_size > records_size - offset) {
      return bad_pclntab(what,
                         which() + "'s record offset " + hex_of(offset) + " is outside the table");
    }
    const uint64_t record = header.pcln_offset + offset;
    const uint64_t record_entry = *read_le(table, record, field);
    if ((header.entry_offsets ? header.text_start + record_entry : record_entry) != address) {
      return bad_pclntab(what, which() + "'s record says it starts at " + hex_of(record_entry) +
                                   ", the function table says " + hex_of(address));
    }
    const auto name_offset = static_cast<int32_t>(*read_le(table, record + field, 4));
    const uint64_t name_start = header.funcname_offset + static_cast<uint64_t>(name_offset);
    if (name_offset < 0 || name_start >= table.size()) {
      return bad_pclntab(what, which() + "'s name offset " + std::to_string(name_offset) +
                                   " is outside the table");
    }
    const auto* name = reinterpret_cast<const char*>(table.data() + name_start);
    const size_t name_length = strnlen(name, table.size() - name_start);
    if (name_length == table.size() - name_start || name_length == 0) {
      return bad_pclntab(what, which() + "'s name is empty or not terminated");
    }
    GoFunction function{.name = std::string(name, name_length), .address = address};
    const uint64_t limit = next_entry - address;
    const auto pcsp = static_cast<uint32_t>(*read_le(table, record + field + 12, 4));
    if (pcsp == 0) {
      function.size = limit;
    } else {
      auto extent = pc_table_extent(table, header, pcsp, limit, what, function.name);
      if (!extent) return std::unexpected(extent.error());
      function.size = *extent;
    }
    functions.push_back(std::move(function));
  }
  return functions;
}

Result<std::optional<GoBinary>> read_go_binary(const ElfFile& file) {
  const std::optional<ElfSection> buildinfo = file.section(".go.buildinfo");
  if (!buildinfo) {
    if (has_go_sections(file)) {
      return bad_input(file.path() +
                           " is a Go binary without .go.buildinfo: its Go version is "
                           "unknown",
                       "built before Go 1.13? funclatency supports Go 1.17 and later");
    }
    return std::optional<GoBinary>{};
  }
  auto blob = whole_section(file, *buildinfo);
  if (!blob) return std::unexpected(blob.error());
  const GoAddressReader read = [&file](uint64_t address, size_t count) {
    return file.bytes_at_address(address, count);
  };
  auto version = parse_go_buildinfo(*blob, read, file.path());
  if (!version) return std::unexpected(version.error());

  GoBinary binary{.version = std::move(*version)};
  binary.goid_offset = go_goid_offset(binary.version.major, binary.version.minor);
  // Before 1.16 the pclntab has another format; such binaries are refused
  // for their version, so their functions are not read.
  if (binary.version.major == 1 && binary.version.minor < 16) return binary;
  auto functions = read_pclntab(file);
  if (!functions) return std::unexpected(functions.error());
  binary.functions = std::move(*functions);
  return binary;
}

bool has_go_sections(const ElfFile& file) {
  return file.section(".go.buildinfo") || file.section(".gopclntab") ||
         file.section(".data.rel.ro.gopclntab");
}

}  // namespace funclatency
