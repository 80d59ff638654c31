#include "symbols/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/non_copyable.h"
#include "common/unique_fd.h"

namespace funclatency {

struct ElfFile::Image : NonCopyable {
  // libelf may convert data in place, so the bytes are writable and private:
  // either a copy-on-write mapping of the file or an owned copy.
  uint8_t* data = nullptr;
  size_t size = 0;
  bool mapped = false;
  std::vector<uint8_t> owned;

  Image() = default;
  ~Image() {
    if (mapped) munmap(data, size);
  }
};

namespace {

struct ElfHandleCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfHandle = std::unique_ptr<Elf, ElfHandleCloser>;

std::string libelf_message() {
  const char* text = elf_errmsg(-1);
  return text != nullptr ? text : "unknown libelf error";
}

std::string to_hex(const uint8_t* bytes, size_t count) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(count * 2);
  for (size_t i = 0; i < count; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 0xf];
  }
  return hex;
}

std::optional<std::string> build_id_from_notes(Elf_Data* data) {
  size_t offset = 0;
  GElf_Nhdr header;
  size_t name_offset = 0;
  size_t desc_offset = 0;
  while (offset < data->d_size) {
    const size_t next = gelf_getnote(data, offset, &header, &name_offset, &desc_offset);
    if (next == 0 || next <= offset) break;
    const auto* bytes = static_cast<const uint8_t*>(data->d_buf);
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(bytes + name_offset, "GNU", 4) == 0 && header.n_descsz > 0 &&
        desc_offset + header.n_descsz <= data->d_size) {
      return to_hex(bytes + desc_offset, header.n_descsz);
    }
    offset = next;
  }
  return std::nullopt;
}

// .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, then a
// little-endian CRC-32 of the debug file.
std::optional<DebugLink> parse_debug_link(Elf_Data* data) {
  const auto* bytes = static_cast<const char*>(data->d_buf);
  const size_t size = data->d_size;
  const size_t name_length = strnlen(bytes, size);
  if (name_length == 0 || name_length == size) return std::nullopt;
  const size_t crc_offset = (name_length + 1 + 3) & ~size_t{3};
  if (crc_offset + 4 > size) return std::nullopt;
  DebugLink link;
  link.file_name.assign(bytes, name_length);
  if (link.file_name.find('/') != std::string::npos) return std::nullopt;
  uint32_t crc = 0;
  std::memcpy(&crc, bytes + crc_offset, sizeof crc);
  link.crc = crc;
  return link;
}

// The libelf handle on the image, once it is known to be ELF at all.
Result<ElfHandle> open_elf(uint8_t* image, size_t size, const std::string& name) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return runtime_error("initialise libelf: " + libelf_message());
  }
  ElfHandle elf(elf_memory(reinterpret_cast<char*>(image), size));
  if (!elf) return bad_input(name + " is not an ELF file: " + libelf_message());
  if (elf_kind(elf.get()) != ELF_K_ELF) return bad_input(name + " is not an ELF file");
  return elf;
}

// The file header: an executable or shared object whose header tables lie
// inside the file.
Result<void> check_header(Elf* elf, size_t file_size, const std::string& name) {
  GElf_Ehdr header;
  if (gelf_getehdr(elf, &header) == nullptr) {
    return bad_input(name + " is a malformed ELF file (header): " + libelf_message());
  }
  if (header.e_type != ET_EXEC && header.e_type != ET_DYN) {
    return bad_input(name + " is not an executable or shared library (ELF type " +
                     std::to_string(header.e_type) + ")");
  }
  // A cut-off copy keeps a valid header; its tables then point past the end,
  // where libelf would quietly find no sections (and the file would look
  // stripped).
  const uint64_t program_headers_end =
      header.e_phoff + uint64_t{header.e_phnum} * header.e_phentsize;
  const uint64_t section_headers_end =
      header.e_shoff + uint64_t{header.e_shnum} * header.e_shentsize;
  if (program_headers_end > file_size || section_headers_end > file_size) {
    return bad_input(name + " is a malformed ELF file: its headers extend past the end of " +
                     "the file (truncated?)");
  }
  return {};
}

// The PT_LOAD program headers, in file order.
Result<std::vector<LoadSegment>> read_load_segments(Elf* elf, const std::string& name) {
  size_t program_header_count = 0;
  if (elf_getphdrnum(elf, &program_header_count) != 0) {
    return bad_input(name + " is a malformed ELF file (program headers): " + libelf_message());
  }
  std::vector<LoadSegment> segments;
  for (size_t i = 0; i < program_header_count; ++i) {
    GElf_Phdr program_header;
    if (gelf_getphdr(elf, static_cast<int>(i), &program_header) == nullptr) {
      return bad_input(name + " is a malformed ELF file (program header " + std::to_string(i) +
                       "): " + libelf_message());
    }
    if (program_header.p_type != PT_LOAD) continue;
    segments.push_back(LoadSegment{.address = program_header.p_vaddr,
                                   .file_offset = program_header.p_offset,
                                   .file_size = program_header.p_filesz,
                                   .memory_size = program_header.p_memsz,
                                   .executable = (program_header.p_flags & PF_X) != 0});
  }
  return segments;
}

// A symbol table (.symtab or .dynsym) with bytes in the file: its symbols
// are read only when asked for.
struct SymbolSection {
  GElf_Shdr header;
  Elf_Data* data = nullptr;
  size_t index = 0;  // the section's index, which hash tables link to
  size_t count = 0;  // entries
};

// A .gnu.hash or .hash section over the symbol table at index `link`.
struct HashSection {
  size_t link = 0;
  uint64_t file_offset = 0;
  uint64_t size = 0;
  bool gnu = false;
};

// What load keeps from the sections' data, beyond their headers.
struct SectionContents {
  std::vector<SymbolSection> symbol_sections;
  std::vector<HashSection> hash_sections;
  bool has_symtab = false;
  std::optional<std::string> build_id;  // from the first note that has one
  std::optional<DebugLink> debug_link;
};

// An entry of a symbol table as symbols() lists it: a defined, named
// function (STT_FUNC or STT_GNU_IFUNC), or nothing.
std::optional<ElfSymbolView> as_function(Elf* elf, const SymbolSection& table,
                                         const GElf_Sym& symbol) {
  const int type = GELF_ST_TYPE(symbol.st_info);
  if (type != STT_FUNC && type != STT_GNU_IFUNC) return std::nullopt;
  if (symbol.st_shndx == SHN_UNDEF) return std::nullopt;
  const char* name = elf_strptr(elf, table.header.sh_link, static_cast<size_t>(symbol.st_name));
  if (name == nullptr || *name == '\0') return std::nullopt;
  return ElfSymbolView{.name = name, .address = symbol.st_value, .ifunc = type == STT_GNU_IFUNC};
}

ElfSymbol to_symbol(const ElfSymbolView& view, const GElf_Sym& symbol, const SymbolSection& table) {
  return ElfSymbol{.name = std::string(view.name),
                   .address = view.address,
                   .size = symbol.st_size,
                   .binding = static_cast<uint8_t>(GELF_ST_BIND(symbol.st_info)),
                   .ifunc = view.ifunc,
                   .dynamic = table.header.sh_type == SHT_DYNSYM};
}

// The defined, named functions of one symbol table that `keep` accepts, in
// table order. A table whose entries stop converting ends there.
template <typename Keep>
void read_function_symbols(Elf* elf, const SymbolSection& table, const Keep& keep,
                           std::vector<ElfSymbol>& symbols) {
  for (size_t i = 0; i < table.count; ++i) {
    GElf_Sym symbol;
    if (gelf_getsym(table.data, static_cast<int>(i), &symbol) == nullptr) break;
    const auto view = as_function(elf, table, symbol);
    if (view && keep(*view)) symbols.push_back(to_symbol(*view, symbol, table));
  }
}

uint32_t load_u32(std::span<const uint8_t> bytes, uint64_t offset) {
  uint32_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

uint64_t load_u64(std::span<const uint8_t> bytes, uint64_t offset) {
  uint64_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

uint32_t gnu_hash(std::string_view name) {
  uint32_t hash = 5381;
  for (const unsigned char c : name) hash = hash * 33 + c;
  return hash;
}

uint32_t sysv_hash(std::string_view name) {
  uint32_t hash = 0;
  for (const unsigned char c : name) {
    hash = (hash << 4) + c;
    const uint32_t high = hash & 0xf0000000u;
    if (high != 0) hash ^= high >> 24;
    hash &= ~high;
  }
  return hash;
}

// The entries of a symbol table of `count` entries that can be called
// `name` according to its .gnu.hash (64-bit): those on the name's hash chain
// whose hash matches, and those below the table's symoffset, which the hash
// does not cover. Nothing when the table is malformed (read the whole table).
std::optional<std::vector<size_t>> gnu_hash_candidates(std::span<const uint8_t> table, size_t count,
                                                       std::string_view name) {
  if (table.size() < 16) return std::nullopt;
  const uint32_t bucket_count = load_u32(table, 0);
  const uint32_t symbol_offset = load_u32(table, 4);
  const uint32_t bloom_words = load_u32(table, 8);
  const uint32_t bloom_shift = load_u32(table, 12);
  if (bucket_count == 0 || bloom_words == 0 || bloom_shift >= 32 || symbol_offset > count) {
    return std::nullopt;
  }
  const uint64_t buckets_at = 16 + uint64_t{bloom_words} * 8;
  const uint64_t chain_at = buckets_at + uint64_t{bucket_count} * 4;
  if (chain_at > table.size()) return std::nullopt;
  std::vector<size_t> candidates;
  for (size_t i = 1; i < symbol_offset; ++i) candidates.push_back(i);

  const uint32_t hash = gnu_hash(name);
  const uint64_t word = load_u64(table, 16 + uint64_t{(hash / 64) % bloom_words} * 8);
  const uint64_t mask =
      (uint64_t{1} << (hash % 64)) | (uint64_t{1} << ((hash >> bloom_shift) % 64));
  if ((word & mask) != mask) return candidates;
  uint32_t index = load_u32(table, buckets_at + uint64_t{hash % bucket_count} * 4);
  if (index == 0) return candidates;
  if (index < symbol_offset) return std::nullopt;
  for (; index < count; ++index) {
    const uint64_t at = chain_at + uint64_t{index - symbol_offset} * 4;
    if (at + 4 > table.size()) return std::nullopt;
    const uint32_t chained = load_u32(table, at);
    if ((chained | 1) == (hash | 1)) candidates.push_back(index);
    if ((chained & 1) != 0) return candidates;
  }
  return std::nullopt;  // the chain runs past the symbol table
}

// The same through a SysV .hash (32-bit words): every entry on the name's
// chain. Nothing when the table is malformed.
std::optional<std::vector<size_t>> sysv_hash_candidates(std::span<const uint8_t> table,
                                                        size_t count, std::string_view name) {
  if (table.size() < 8) return std::nullopt;
  const uint32_t bucket_count = load_u32(table, 0);
  const uint32_t chain_count = load_u32(table, 4);
  if (bucket_count == 0 || 8 + (uint64_t{bucket_count} + chain_count) * 4 > table.size()) {
    return std::nullopt;
  }
  const uint64_t chain_at = 8 + uint64_t{bucket_count} * 4;
  std::vector<size_t> candidates;
  uint32_t index = load_u32(table, 8 + uint64_t{sysv_hash(name) % bucket_count} * 4);
  while (index != 0) {
    if (index >= chain_count || index >= count || candidates.size() > chain_count) {
      return std::nullopt;
    }
    candidates.push_back(index);
    index = load_u32(table, chain_at + uint64_t{index} * 4);
  }
  std::sort(candidates.begin(), candidates.end());
  return candidates;
}

// The data of one section, if it is a symbol table, a hash table, a note
// (build-id) or .gnu_debuglink; other sections, and those without bytes in
// the file, add nothing.
void read_section_contents(Elf_Scn* section, const GElf_Shdr& header, const char* section_name,
                           size_t symbol_entry_size, SectionContents& contents) {
  if (header.sh_type == SHT_NOBITS) return;
  if (header.sh_type == SHT_GNU_HASH || (header.sh_type == SHT_HASH && header.sh_entsize == 4)) {
    contents.hash_sections.push_back(HashSection{.link = header.sh_link,
                                                 .file_offset = header.sh_offset,
                                                 .size = header.sh_size,
                                                 .gnu = header.sh_type == SHT_GNU_HASH});
    return;
  }
  const bool is_symbol_table = header.sh_type == SHT_SYMTAB || header.sh_type == SHT_DYNSYM;
  const bool is_note = header.sh_type == SHT_NOTE;
  const bool is_debug_link =
      section_name != nullptr && std::strcmp(section_name, ".gnu_debuglink") == 0;
  if (!is_symbol_table && !is_note && !is_debug_link) return;

  Elf_Data* data = elf_getdata(section, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size == 0) return;
  if (is_note) {
    if (!contents.build_id) contents.build_id = build_id_from_notes(data);
    return;
  }
  if (is_debug_link) {
    contents.debug_link = parse_debug_link(data);
    return;
  }
  if (header.sh_type == SHT_SYMTAB) contents.has_symtab = true;
  contents.symbol_sections.push_back(SymbolSection{.header = header,
                                                   .data = data,
                                                   .index = elf_ndxscn(section),
                                                   .count = data->d_size / symbol_entry_size});
}

}  // namespace

struct ElfFile::Tables {
  std::shared_ptr<const Image> image;  // outlives the handle, which reads it
  ElfHandle elf;
  std::vector<SymbolSection> symbol_sections;
  std::vector<HashSection> hash_sections;
  // The hash tables are read in place: only in files laid out as this host
  // reads them (64-bit, little-endian), where libelf converts nothing.
  bool native_layout = false;
  std::mutex lock;  // libelf reads strings and data lazily
  std::once_flag all_read;
  std::vector<ElfSymbol> all;

  // The entries of `table` that can be called `name` by a hash table over
  // it, or nothing (read the whole table).
  std::optional<std::vector<size_t>> hashed_candidates(const SymbolSection& table,
                                                       std::string_view name) const {
    if (!native_layout || table.header.sh_type != SHT_DYNSYM) return std::nullopt;
    // .gnu.hash first: the loader prefers it, and some files carry a stale .hash.
    for (const bool gnu : {true, false}) {
      for (const HashSection& hash : hash_sections) {
        if (hash.gnu != gnu || hash.link != table.index || hash.file_offset >= image->size ||
            hash.size > image->size - hash.file_offset) {
          continue;
        }
        const std::span<const uint8_t> bytes(image->data + hash.file_offset, hash.size);
        auto candidates = gnu ? gnu_hash_candidates(bytes, table.count, name)
                              : sysv_hash_candidates(bytes, table.count, name);
        if (candidates) return candidates;
      }
    }
    return std::nullopt;
  }
};

const std::vector<ElfSymbol>& ElfFile::symbols() const {
  static const std::vector<ElfSymbol> kNone;
  if (!tables_) return kNone;
  Tables& tables = *tables_;
  std::call_once(tables.all_read, [&tables] {
    const std::lock_guard guard(tables.lock);
    for (const SymbolSection& table : tables.symbol_sections) {
      read_function_symbols(
          tables.elf.get(), table, [](const ElfSymbolView&) { return true; }, tables.all);
    }
  });
  return tables.all;
}

std::vector<ElfSymbol> ElfFile::symbols_where(
    const std::function<bool(const ElfSymbolView&)>& keep) const {
  std::vector<ElfSymbol> kept;
  if (!tables_) return kept;
  const std::lock_guard guard(tables_->lock);
  for (const SymbolSection& table : tables_->symbol_sections) {
    read_function_symbols(tables_->elf.get(), table, keep, kept);
  }
  return kept;
}

std::vector<ElfSymbol> ElfFile::symbols_named(std::string_view name) const {
  std::vector<ElfSymbol> named;
  if (!tables_) return named;
  const std::lock_guard guard(tables_->lock);
  const auto is_named = [name](const ElfSymbolView& view) { return view.name == name; };
  for (const SymbolSection& table : tables_->symbol_sections) {
    const auto candidates = tables_->hashed_candidates(table, name);
    if (!candidates) {
      read_function_symbols(tables_->elf.get(), table, is_named, named);
      continue;
    }
    for (const size_t index : *candidates) {
      GElf_Sym symbol;
      if (gelf_getsym(table.data, static_cast<int>(index), &symbol) == nullptr) continue;
      const auto view = as_function(tables_->elf.get(), table, symbol);
      if (view && is_named(*view)) named.push_back(to_symbol(*view, symbol, table));
    }
  }
  return named;
}

Result<ElfFile> ElfFile::open(const std::string& path) {
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) {
    const int err = errno;
    return bad_input("cannot open " + path, {}, err);
  }
  struct stat status;
  if (fstat(file.get(), &status) != 0) {
    const int err = errno;
    return bad_input("cannot read " + path, {}, err);
  }
  if (!S_ISREG(status.st_mode)) return bad_input(path + " is not a regular file");
  if (status.st_size == 0) return bad_input(path + " is not an ELF file (it is empty)");
  auto image = std::make_shared<Image>();
  void* mapping = mmap(nullptr, static_cast<size_t>(status.st_size), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE, file.get(), 0);
  if (mapping == MAP_FAILED) {
    const int err = errno;
    return bad_input("cannot map " + path, {}, err);
  }
  image->data = static_cast<uint8_t*>(mapping);
  image->size = static_cast<size_t>(status.st_size);
  image->mapped = true;

  ElfFile elf_file;
  elf_file.path_ = path;
  elf_file.image_ = std::move(image);
  if (auto loaded = elf_file.load(path.c_str()); !loaded) return std::unexpected(loaded.error());
  return elf_file;
}

Result<ElfFile> ElfFile::parse(std::span<const uint8_t> bytes, std::string name) {
  auto image = std::make_shared<Image>();
  image->owned.assign(bytes.begin(), bytes.end());
  image->data = image->owned.data();
  image->size = image->owned.size();
  ElfFile elf_file;
  elf_file.path_ = std::move(name);
  elf_file.image_ = std::move(image);
  if (elf_file.image_->size == 0) {
    return bad_input(elf_file.path_ + " is not an ELF file (it is empty)");
  }
  if (auto loaded = elf_file.load(elf_file.path_.c_str()); !loaded) {
    return std::unexpected(loaded.error());
  }
  return elf_file;
}

Result<void> ElfFile::load(const char* what) {
  const std::string name(what);
  auto elf = open_elf(image_->data, image_->size, name);
  if (!elf) return std::unexpected(elf.error());
  if (auto checked = check_header(elf->get(), image_->size, name); !checked) {
    return std::unexpected(checked.error());
  }
  auto segments = read_load_segments(elf->get(), name);
  if (!segments) return std::unexpected(segments.error());
  segments_ = std::move(*segments);

  size_t section_names_index = 0;
  if (elf_getshdrstrndx(elf->get(), &section_names_index) != 0) {
    return bad_input(name + " is a malformed ELF file (section names): " + libelf_message());
  }
  const size_t symbol_entry_size = gelf_fsize(elf->get(), ELF_T_SYM, 1, EV_CURRENT);
  if (symbol_entry_size == 0) return bad_input(name + " is a malformed ELF file (ELF class)");

  // Each section is read as its header is: libelf may convert a section's
  // data in place, so this keeps the order in which the image is looked at.
  SectionContents contents;
  for (Elf_Scn* section = elf_nextscn(elf->get(), nullptr); section != nullptr;
       section = elf_nextscn(elf->get(), section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) {
      return bad_input(name + " is a malformed ELF file (section header): " + libelf_message());
    }
    const char* section_name = elf_strptr(elf->get(), section_names_index, header.sh_name);
    if (section_name != nullptr) {
      sections_.push_back(SectionHeader{.name = section_name,
                                        .address = header.sh_addr,
                                        .file_offset = header.sh_offset,
                                        .size = header.sh_size,
                                        .in_file = header.sh_type != SHT_NOBITS});
    }
    read_section_contents(section, header, section_name, symbol_entry_size, contents);
  }
  GElf_Ehdr file_header;
  const bool native = std::endian::native == std::endian::little &&
                      gelf_getehdr(elf->get(), &file_header) != nullptr &&
                      file_header.e_ident[EI_CLASS] == ELFCLASS64 &&
                      file_header.e_ident[EI_DATA] == ELFDATA2LSB;
  tables_ = std::make_shared<Tables>();
  tables_->image = image_;
  tables_->elf = std::move(*elf);
  tables_->symbol_sections = std::move(contents.symbol_sections);
  tables_->hash_sections = std::move(contents.hash_sections);
  tables_->native_layout = native;
  has_symtab_ = contents.has_symtab;
  build_id_ = std::move(contents.build_id);
  debug_link_ = std::move(contents.debug_link);
  return {};
}

std::optional<ElfSection> ElfFile::section(std::string_view name) const {
  for (const SectionHeader& header : sections_) {
    if (header.name != name) continue;
    ElfSection section{.name = header.name,
                       .address = header.address,
                       .file_offset = header.file_offset,
                       .size = header.size};
    if (header.in_file) section.bytes = bytes_at(header.file_offset, header.size);
    return section;
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::file_offset(uint64_t address) const {
  for (const LoadSegment& segment : segments_) {
    if (address >= segment.address && address - segment.address < segment.file_size) {
      return segment.file_offset + (address - segment.address);
    }
  }
  return std::nullopt;
}

bool ElfFile::in_executable_segment(uint64_t address, uint64_t size) const {
  for (const LoadSegment& segment : segments_) {
    if (!segment.executable || address < segment.address) continue;
    const uint64_t start = address - segment.address;
    if (start < segment.file_size && size <= segment.file_size - start) return true;
  }
  return false;
}

std::span<const uint8_t> ElfFile::bytes_at(uint64_t offset, size_t count) const {
  if (!image_ || offset >= image_->size) return {};
  const size_t available = static_cast<size_t>(image_->size - offset);
  return {image_->data + offset, std::min(count, available)};
}

std::span<const uint8_t> ElfFile::bytes_at_address(uint64_t address, size_t count) const {
  for (const LoadSegment& segment : segments_) {
    if (address < segment.address || address - segment.address >= segment.file_size) continue;
    const uint64_t start = address - segment.address;
    const uint64_t in_segment = std::min<uint64_t>(count, segment.file_size - start);
    return bytes_at(segment.file_offset + start, static_cast<size_t>(in_segment));
  }
  return {};
}

uint32_t ElfFile::crc32() const {
  if (!image_) return 0;
  uLong crc = ::crc32(0L, Z_NULL, 0);
  size_t done = 0;
  while (done < image_->size) {
    // zlib takes a uInt length: feed large files in pieces.
    const size_t piece = std::min<size_t>(image_->size - done, 1u << 30);
    crc = ::crc32(crc, image_->data + done, static_cast<uInt>(piece));
    done += piece;
  }
  return static_cast<uint32_t>(crc);
}

bool starts_with_endbr64(std::span<const uint8_t> code) {
  static constexpr uint8_t kEndbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  return code.size() >= sizeof kEndbr64 &&
         std::equal(std::begin(kEndbr64), std::end(kEndbr64), code.begin());
}

}  // namespace funclatency
