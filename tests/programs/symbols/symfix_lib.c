// A small shared library for the symbol tests (soname libsymfix.so.1).
volatile int symfix_lib_sink;

__attribute__((noinline)) int symfix_lib_work(int x) {
  return symfix_lib_sink += x;
}
__attribute__((noinline)) int symfix_lib_other(int x) {
  return symfix_lib_sink ^= x;
}

// An IFUNC, as glibc's string functions are: the symbol symfix_lib_pick is
// a resolver that returns the implementation to call.
__attribute__((noinline)) int symfix_lib_pick_impl(int x) {
  return symfix_lib_sink += 2 * x;
}
static int (*resolve_symfix_lib_pick(void))(int) {
  return symfix_lib_pick_impl;
}
int symfix_lib_pick(int x) __attribute__((ifunc("resolve_symfix_lib_pick")));
