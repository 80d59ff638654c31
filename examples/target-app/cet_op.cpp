// Compiled with -fcf-protection=branch (see CMakeLists.txt): the one function
// of target-app that starts with endbr64, as every function of a CET build does.
#include <array>

#include "traced_functions.h"

extern "C" [[gnu::noinline]] std::uint64_t cet_op(std::uint64_t seed) {
  // A small checksum over a table built from the seed, enough work that the
  // function does not disappear, little enough to stay a microsecond or so.
  std::array<std::uint32_t, 64> table{};
  for (std::size_t i = 0; i < table.size(); ++i) {
    table[i] = static_cast<std::uint32_t>(seed * 2654435761u + i);
  }
  std::uint64_t checksum = 0;
  for (std::uint32_t value : table) checksum = (checksum << 5) + checksum + value;
  return checksum;
}
