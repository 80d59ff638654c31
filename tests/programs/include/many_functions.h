/* Many distinct small functions from one line each, for the test programs
 * that trace hundreds of functions (slot-rates, refused-probes):
 * ALL(DEFINE) defines them, {ALL(ENTRY)} lists them with their names.
 * TEN(F, p, k) applies F to p0..p9 with keys k*10+0..9; HUNDRED likewise to
 * p00..p99. Each body multiplies by its own key, so no two fold into one. */
#ifndef FUNCLATENCY_TEST_MANY_FUNCTIONS_H
#define FUNCLATENCY_TEST_MANY_FUNCTIONS_H

// clang-format off
#define DEFINE(name, k)                                           \
  __attribute__((noinline)) unsigned long name(unsigned long x) { \
    __asm__ volatile("" : "+r"(x));                               \
    return x * (k) + (k);                                         \
  }
#define ENTRY(name, k) {#name, name},
#define TEN(F, p, k)                                                               \
  F(p##0, (k)*10 + 0) F(p##1, (k)*10 + 1) F(p##2, (k)*10 + 2) F(p##3, (k)*10 + 3) \
  F(p##4, (k)*10 + 4) F(p##5, (k)*10 + 5) F(p##6, (k)*10 + 6) F(p##7, (k)*10 + 7) \
  F(p##8, (k)*10 + 8) F(p##9, (k)*10 + 9)
#define HUNDRED(F, p, k)                                                       \
  TEN(F, p##0, (k)*10 + 0) TEN(F, p##1, (k)*10 + 1) TEN(F, p##2, (k)*10 + 2) \
  TEN(F, p##3, (k)*10 + 3) TEN(F, p##4, (k)*10 + 4) TEN(F, p##5, (k)*10 + 5) \
  TEN(F, p##6, (k)*10 + 6) TEN(F, p##7, (k)*10 + 7) TEN(F, p##8, (k)*10 + 8) \
  TEN(F, p##9, (k)*10 + 9)
// clang-format on

#endif
