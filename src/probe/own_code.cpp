// Why: see own_code.h.
#include "probe/own_code.h"

#include <fmt/format.h>
#include <link.h>

#include <cerrno>
#include <memory>

#include "common/own_executable.h"
#include "symbols/elf_file.h"

namespace funclatency {

namespace {

struct OwnCodeSearch {
  uintptr_t address = 0;
  OwnCode found;
  bool done = false;
};

// The PT_LOAD segment of one loaded object that holds the address, if any.
int find_own_segment(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<OwnCodeSearch*>(data);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type != PT_LOAD || search->address < start ||
        search->address >= start + segment.p_memsz) {
      continue;
    }
    search->found.path = info->dlpi_name[0] ? info->dlpi_name : kOwnExecutableLink;
    search->found.file_offset = search->address - start + segment.p_offset;
    search->found.address = search->address - info->dlpi_addr;
    search->done = true;
    return 1;
  }
  return 0;
}

}  // namespace

Result<OwnCode> locate_own_code(const void* code) {
  OwnCodeSearch search;
  search.address = reinterpret_cast<uintptr_t>(code);
  dl_iterate_phdr(find_own_segment, &search);
  if (!search.done) return runtime_error("find funclatency's own code in its loaded files", ENOENT);
  return search.found;
}

Result<ProbeSite> own_probe_site(const void* code, uint64_t size, const std::string& name) {
  auto located = locate_own_code(code);
  if (!located) return std::unexpected(located.error());
  ProbeSite site;
  site.binary = located->path;
  if (site.binary == kOwnExecutableLink) {
    // Reports name the file; probes and reads go through the kernel's link.
    auto named = own_executable();
    if (named) site.binary = *named;
    site.attach_path = kOwnExecutableLink;
  }
  site.symbol = name;
  site.raw_symbol = name;
  site.address = located->address;
  site.size = size;
  site.file_offset = located->file_offset;
  auto file = ElfFile::open(site.openable_path());
  if (!file) return std::unexpected(file.error());
  site.file = std::make_shared<const ElfFile>(std::move(*file));
  const auto bytes = site.file->bytes_at(site.file_offset, size);
  if (bytes.size() != size) {
    return runtime_error(fmt::format("read the code of {} in {}", name, site.binary), EIO);
  }
  return site;
}

}  // namespace funclatency
