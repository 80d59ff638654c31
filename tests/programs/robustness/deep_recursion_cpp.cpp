// The C++ build of deep_recursion.c: a try/catch gives the file the
// .gcc_except_table that makes funclatency probe ret instructions (a return
// probe would break exceptions unwinding through the traced function).
#include <stdexcept>

#include "deep_recursion.c"

[[gnu::noinline]] static void throw_when(bool condition) {
  if (condition) throw std::runtime_error("never thrown in the tests");
}

void robust_keep_exception_tables(int argc) {
  try {
    throw_when(argc > 1000);
  } catch (const std::exception&) {
    std::fputs("robust-deep: caught\n", stderr);
  }
}
