// libFuzzer target for the ELF reader: any bytes give an ElfFile or a
// kBadInput Error, and using a parsed file the way the resolver does never
// crashes (AddressSanitizer and UBSan watch every access).
#include <cstddef>
#include <cstdint>
#include <span>

#include "symbols/demangle.h"
#include "symbols/elf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace funclatency;
  auto file = ElfFile::parse(std::span(data, size), "fuzz-input");
  if (!file) {
    if (file.error().kind != ErrorKind::kBadInput) __builtin_trap();
    return 0;
  }
  // Lookups by name read the hash tables: a name the file has, and one it has not.
  (void)file->symbols_named("main");
  for (const ElfSymbol& symbol : file->symbols()) {
    if (&symbol == &file->symbols().front()) (void)file->symbols_named(symbol.name);
    (void)without_parameters(demangle(symbol.name));
    (void)file->in_executable_segment(symbol.address, symbol.size);
    if (auto offset = file->file_offset(symbol.address)) {
      (void)starts_with_endbr64(file->bytes_at(*offset, 4));
    }
  }
  (void)file->crc32();
  return 0;
}
