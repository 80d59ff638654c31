// What the stack resolver keeps of one ELF file: its loadable segments (to
// turn a file offset into an ELF address, and to place the file for the
// unwinder) and its functions as sorted address ranges, read on first use from
// .symtab/.dynsym, a separate debug file, or a Go binary's pclntab. Shared by
// every process that maps the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "symbols/elf_file.h"
#include "symbols/search_paths.h"

namespace funclatency {

// A function's code, [start, end) in ELF addresses, with its name as the
// symbol table (or Go's pclntab) spells it.
struct FunctionRange {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string name;
};

class BinarySymbols {
 public:
  // Reads the program headers of the file at `path` (openable by us); the
  // function tables are read when first asked for. `debug_paths` says where
  // a stripped file's debug file may be. kBadInput when it is not ELF.
  static Result<std::shared_ptr<BinarySymbols>> open(const std::string& path,
                                                     SearchPaths debug_paths = {});
  // From parts (tests): the functions may be unsorted, overlap, or repeat.
  BinarySymbols(std::vector<LoadSegment> segments, std::vector<FunctionRange> functions);

  const std::vector<LoadSegment>& segments() const { return segments_; }
  // The ELF address stored at `file_offset`, through the PT_LOAD holding it.
  std::optional<uint64_t> address_at_offset(uint64_t file_offset) const;
  // The function holding ELF address `address`: of those that do, the one
  // that starts closest below it. Reads the tables on the first call.
  const FunctionRange* function_at(uint64_t address);
  size_t function_count();

 private:
  BinarySymbols() = default;
  void read_functions();

  std::vector<LoadSegment> segments_;
  // Kept only until the tables are read.
  std::optional<ElfFile> file_;
  SearchPaths debug_paths_;
  bool functions_read_ = false;
  std::vector<FunctionRange> functions_;  // by start
};

}  // namespace funclatency
