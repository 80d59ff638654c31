// Reads what symbol lookup needs from one ELF file (libelf): function
// symbols, loadable segments, sections by name, build-id and .gnu_debuglink,
// and the bytes at a file offset or virtual address. Every malformed input is
// an Error, never a crash. Symbols are read when first asked for, and one
// name can be looked up through the ELF hash tables without reading the rest:
// start-up pays only for what the run uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace funclatency {

// A function symbol (STT_FUNC or STT_GNU_IFUNC) that is defined in the file.
struct ElfSymbol {
  std::string name;  // as in the symbol table (mangled for C++)
  uint64_t address = 0;
  uint64_t size = 0;
  uint8_t binding = 0;   // STB_LOCAL, STB_GLOBAL, STB_WEAK
  bool ifunc = false;    // STT_GNU_IFUNC: the address is the resolver, not the implementation
  bool dynamic = false;  // from .dynsym
};

// A PT_LOAD program header.
struct LoadSegment {
  uint64_t address = 0;  // p_vaddr
  uint64_t file_offset = 0;
  uint64_t file_size = 0;
  uint64_t memory_size = 0;
  bool executable = false;
};

// A section header and the bytes the file holds for it, as stored (a
// compressed section stays compressed).
struct ElfSection {
  std::string name;
  uint64_t address = 0;  // sh_addr: 0 for a section that is not loaded
  uint64_t file_offset = 0;
  uint64_t size = 0;  // sh_size
  // The part of [file_offset, file_offset + size) inside the file: shorter
  // than `size` when the file is cut off, empty for SHT_NOBITS.
  std::span<const uint8_t> bytes;
};

// What a filter sees of a function symbol before anything is copied out of
// the file.
struct ElfSymbolView {
  std::string_view name;
  uint64_t address = 0;
  bool ifunc = false;
};

struct DebugLink {
  std::string file_name;
  uint32_t crc = 0;
};

class ElfFile {
 public:
  // Maps and parses the file at `path`. Missing, unreadable, not ELF,
  // malformed, or not an executable/shared object: kBadInput naming `path`.
  static Result<ElfFile> open(const std::string& path);
  // Parses an in-memory image (the fuzzer's entry point); `name` is used in
  // messages.
  static Result<ElfFile> parse(std::span<const uint8_t> image, std::string name);

  const std::string& path() const { return path_; }
  // Every function symbol: .dynsym and .symtab, in section order, then
  // symbol order. Read on the first call (and kept); thread-safe.
  const std::vector<ElfSymbol>& symbols() const;
  // The function symbols called `name`: exactly those of symbols(), in the
  // same order, found in .dynsym through .gnu.hash (or .hash) where the file
  // has one, so that a stripped library's table is not read.
  std::vector<ElfSymbol> symbols_named(std::string_view name) const;
  // The function symbols `keep` accepts, in symbols() order; the others are
  // looked at in place and never copied.
  std::vector<ElfSymbol> symbols_where(const std::function<bool(const ElfSymbolView&)>& keep) const;
  const std::vector<LoadSegment>& segments() const { return segments_; }
  bool has_symtab() const { return has_symtab_; }
  // Lower-case hex of the GNU build-id note, if the file has one.
  const std::optional<std::string>& build_id() const { return build_id_; }
  const std::optional<DebugLink>& debug_link() const { return debug_link_; }

  // The first section called `name`, or nothing (also when the file has no
  // section headers). The bytes stay valid while this ElfFile (or a copy) lives.
  std::optional<ElfSection> section(std::string_view name) const;

  // The file offset a virtual address is stored at (through PT_LOAD), or
  // nothing when no loaded part of the file holds it.
  std::optional<uint64_t> file_offset(uint64_t address) const;
  // True when [address, address + size) lies inside one executable PT_LOAD.
  bool in_executable_segment(uint64_t address, uint64_t size) const;
  // Up to `count` bytes of the file starting at `offset` (fewer at the end).
  std::span<const uint8_t> bytes_at(uint64_t offset, size_t count) const;
  // Up to `count` bytes stored at a virtual address: fewer where the file
  // part of the PT_LOAD holding it (or the file) ends, none when no loaded
  // part of the file holds it.
  std::span<const uint8_t> bytes_at_address(uint64_t address, size_t count) const;
  // CRC-32 of the whole file, as .gnu_debuglink records it.
  uint32_t crc32() const;

 private:
  struct Image;   // the file's bytes: a private mapping or an owned copy
  struct Tables;  // the libelf handle and symbol tables, read on demand
  struct SectionHeader {
    std::string name;
    uint64_t address = 0;
    uint64_t file_offset = 0;
    uint64_t size = 0;
    bool in_file = true;  // false for SHT_NOBITS
  };
  ElfFile() = default;
  Result<void> load(const char* what);

  std::string path_;
  std::shared_ptr<const Image> image_;
  std::shared_ptr<Tables> tables_;  // shared by copies, like the image
  std::vector<LoadSegment> segments_;
  std::vector<SectionHeader> sections_;
  bool has_symtab_ = false;
  std::optional<std::string> build_id_;
  std::optional<DebugLink> debug_link_;
};

// True when the bytes are an endbr64 instruction (f3 0f 1e fa).
bool starts_with_endbr64(std::span<const uint8_t> code);

}  // namespace funclatency
