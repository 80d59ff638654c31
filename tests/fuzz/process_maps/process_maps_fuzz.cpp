// libFuzzer target for the /proc/PID/maps parser of the stack resolver
// (stacks/process_maps.h): a slow call's addresses are looked up in whatever
// text the kernel (or a test) hands it. Any bytes must parse without a crash,
// and the result must keep the header's promises: mappings sorted by start,
// each a non-empty [start, end), one per line at most, with fields that read
// back the same; find_mapping returns a mapping that holds the address, and
// (on a map whose mappings do not overlap, as the kernel writes them) the one
// a linear scan finds, or null when none holds it.
//
// Overlapping mappings, which parse_process_maps accepts, are checked only for
// "what find_mapping returns holds the address": there it can return null
// although an earlier, larger mapping holds the address. Build with
// -DPROCESS_MAPS_FUZZ_STRICT to check them against the linear scan as well.
#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "stacks/process_maps.h"

using namespace funclatency;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "process_maps_fuzz: %s\n", what);
    std::abort();
  }
}

// The line the kernel would write for `m` (permissions only say executable).
std::string line_of(const MemoryMapping& m) {
  char head[128];
  std::snprintf(head, sizeof head, "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64 " fd:01 %" PRIu64 " ",
                m.start, m.end, m.executable ? "r-xp" : "rw-p", m.file_offset, m.inode);
  return head + m.path;
}

const MemoryMapping* linear_find(const std::vector<MemoryMapping>& maps, uint64_t address) {
  for (const MemoryMapping& m : maps) {
    if (m.start <= address && address < m.end) return &m;
  }
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<MemoryMapping> maps = parse_process_maps(text);

  // Malformed lines are skipped, so there are at most as many mappings as lines.
  const size_t lines = static_cast<size_t>(std::ranges::count(text, '\n')) +
                       (!text.empty() && !text.ends_with('\n') ? 1 : 0);
  check(maps.size() <= lines, "more mappings than lines");

  bool disjoint = true;
  for (size_t i = 0; i < maps.size(); i++) {
    const MemoryMapping& m = maps[i];
    check(m.start < m.end, "a mapping is empty or backwards");
    if (i > 0) {
      check(maps[i - 1].start <= m.start, "not sorted by address");
      if (maps[i - 1].end > m.start) disjoint = false;
    }
    check(m.path.find('\n') == std::string::npos, "a path holds a newline");
    check(!m.path.starts_with(' '), "a path starts with a space");
    check(std::string(m.file_path()) + (m.is_deleted() ? " (deleted)" : "") == m.path,
          "file_path() and \" (deleted)\" do not make the path");
    check(!m.is_file() || (m.inode != 0 && m.path.starts_with('/')), "is_file() without a file");
    // What was read reads back the same from the kernel's format.
    if (i < 64) {
      const std::vector<MemoryMapping> again = parse_process_maps(line_of(m));
      check(again.size() == 1 && again[0] == m, "a mapping does not read back the same");
    }
  }

  // Addresses at and around the edges of (up to 32 of) the mappings, the ends
  // of the address space, and one taken from the input.
  std::vector<uint64_t> addresses = {0, 1, UINT64_MAX, UINT64_MAX - 1};
  uint64_t hash = 0xcbf29ce484222325;
  for (uint8_t byte : text) hash = (hash ^ byte) * 0x100000001b3;
  addresses.push_back(hash);
  const size_t step = maps.size() / 32 + 1;
  for (size_t i = 0; i < maps.size(); i += step) {
    const MemoryMapping& m = maps[i];
    for (uint64_t a : {m.start, m.start - 1, m.end, m.end - 1, m.start + (m.end - m.start) / 2,
                       m.start + hash % (m.end - m.start)}) {
      addresses.push_back(a);
    }
  }
  for (uint64_t address : addresses) {
    const MemoryMapping* found = find_mapping(maps, address);
    const MemoryMapping* expected = linear_find(maps, address);
    if (found) {
      check(found >= maps.data() && found < maps.data() + maps.size(),
            "find_mapping returned a pointer outside the list");
      check(found->start <= address && address < found->end,
            "find_mapping returned a mapping that does not hold the address");
    }
#ifndef PROCESS_MAPS_FUZZ_STRICT
    if (!disjoint) {
      continue;
    }
#endif
    check((found == nullptr) == (expected == nullptr),
          "find_mapping and a linear scan disagree on whether a mapping holds the address");
    if (disjoint) check(found == expected, "find_mapping found another mapping than the scan");
  }
  (void)find_mapping({}, hash);
  return 0;
}
