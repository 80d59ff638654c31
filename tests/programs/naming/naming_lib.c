// libnaming.so: the shared library the naming tests trace by library name
// (naming:naming_lib_op, libnaming.so:naming_lib_op) and by path.
#include <stdint.h>

__attribute__((noinline)) uint64_t naming_lib_op(uint64_t x) {
  __asm__ volatile("" : "+r"(x));
  return x * 2654435761u + 1;
}

// Never called by the programs: a pattern matching it shows a record with
// no calls, or none at all, but never a count.
__attribute__((noinline)) uint64_t naming_lib_unused(uint64_t x) {
  __asm__ volatile("" : "+r"(x));
  return x ^ 0x5a5a5a5au;
}
