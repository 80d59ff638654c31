// A shared library whose names test lookups by exact name: a C function and
// a C++ overload with the same name (one name, two functions), a static C++
// function (mangled "_ZL..."), found only in .symtab, and an exported C++
// function users can name mangled.
volatile int symfix_names_sink;

extern "C" __attribute__((noinline)) int twin(int x) {
  return x + symfix_names_sink;
}

__attribute__((noinline)) int twin(double x) {
  return static_cast<int>(x) + symfix_names_sink;
}

static __attribute__((noinline)) int lonely(int x) {
  return x * 3 + symfix_names_sink;
}

namespace names {
__attribute__((noinline)) int exported(int x) {
  return lonely(x) + twin(x) + twin(0.5 * x);
}
}  // namespace names
