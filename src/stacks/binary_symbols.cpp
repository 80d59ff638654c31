// Function ranges of one ELF file for the stack resolver (see binary_symbols.h).
#include "stacks/binary_symbols.h"

#include <elf.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "symbols/debug_file.h"
#include "symbols/go_binary.h"

namespace funclatency {

namespace {

// How many ranges function_at looks back past the closest start: enough for
// nested or overlapping symbols, bounded for a pathological table.
constexpr size_t kLookBack = 64;

struct Candidate {
  FunctionRange range;
  int rank = 0;  // lower is preferred among functions starting at one address
};

// Among aliases, the one users know: with a size, global before weak before
// local, fewer leading underscores ("malloc" over "__libc_malloc").
int rank_of(const ElfSymbol& symbol) {
  int rank = symbol.size == 0 ? 100 : 0;
  if (symbol.binding == STB_WEAK) rank += 10;
  if (symbol.binding == STB_LOCAL) rank += 20;
  const size_t underscores = std::min<size_t>(symbol.name.find_first_not_of('_'), 5);
  return rank + static_cast<int>(underscores);
}

// Sorts by start, keeps one function per start, and gives a function of
// unknown size the code up to the next start.
std::vector<FunctionRange> arrange(std::vector<Candidate> candidates) {
  std::ranges::sort(candidates, [](const Candidate& a, const Candidate& b) {
    return std::tie(a.range.start, a.rank) < std::tie(b.range.start, b.rank);
  });
  std::vector<FunctionRange> ranges;
  ranges.reserve(candidates.size());
  for (Candidate& candidate : candidates) {
    if (!ranges.empty() && ranges.back().start == candidate.range.start) continue;
    ranges.push_back(std::move(candidate.range));
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].end > ranges[i].start) continue;
    ranges[i].end = i + 1 < ranges.size() ? ranges[i + 1].start : ranges[i].start;
  }
  return ranges;
}

}  // namespace

Result<std::shared_ptr<BinarySymbols>> BinarySymbols::open(const std::string& path,
                                                           SearchPaths debug_paths) {
  auto file = ElfFile::open(path);
  if (!file) return std::unexpected(file.error());
  std::shared_ptr<BinarySymbols> binary(new BinarySymbols());
  binary->segments_ = file->segments();
  binary->file_ = std::move(*file);
  binary->debug_paths_ = std::move(debug_paths);
  return binary;
}

BinarySymbols::BinarySymbols(std::vector<LoadSegment> segments,
                             std::vector<FunctionRange> functions)
    : segments_(std::move(segments)), functions_read_(true) {
  std::vector<Candidate> candidates;
  for (FunctionRange& function : functions) candidates.push_back({std::move(function), 0});
  functions_ = arrange(std::move(candidates));
}

std::optional<uint64_t> BinarySymbols::address_at_offset(uint64_t file_offset) const {
  for (const LoadSegment& segment : segments_) {
    if (file_offset >= segment.file_offset &&
        file_offset - segment.file_offset < segment.file_size) {
      return segment.address + (file_offset - segment.file_offset);
    }
  }
  return std::nullopt;
}

void BinarySymbols::read_functions() {
  functions_read_ = true;
  if (!file_) return;
  const ElfFile file = std::move(*file_);
  file_.reset();
  std::vector<Candidate> candidates;
  const auto add_symbols = [&candidates](const std::vector<ElfSymbol>& symbols) {
    for (const ElfSymbol& symbol : symbols) {
      if (symbol.address == 0) continue;
      candidates.push_back(
          {{symbol.address, symbol.address + symbol.size, symbol.name}, rank_of(symbol)});
    }
  };
  add_symbols(file.symbols());
  if (!file.has_symtab()) {
    if (auto debug = find_debug_file(file, debug_paths_)) add_symbols(debug->symbols());
  }
  // A stripped Go binary lists its functions only in the pclntab; they rank
  // after the symbol tables' own entries.
  if (has_go_sections(file)) {
    if (auto go = read_go_binary(file); go && *go) {
      for (const GoFunction& function : (*go)->functions) {
        candidates.push_back(
            {{function.address, function.address + function.size, function.name}, 1000});
      }
    }
  }
  functions_ = arrange(std::move(candidates));
}

const FunctionRange* BinarySymbols::function_at(uint64_t address) {
  if (!functions_read_) read_functions();
  auto after = std::ranges::upper_bound(functions_, address, {}, &FunctionRange::start);
  for (size_t looked = 0; after != functions_.begin() && looked < kLookBack; ++looked) {
    --after;
    if (address < after->end) return &*after;
  }
  return nullptr;
}

size_t BinarySymbols::function_count() {
  if (!functions_read_) read_functions();
  return functions_.size();
}

}  // namespace funclatency
