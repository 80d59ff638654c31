// Why: the test that --follow-hold times a program's very first call
// (tests/e2e/test_follow_exec.py): main's first act is one call of
// first_call(), then the program exits. It prints when main began
// (CLOCK_MONOTONIC, ns), so the test can tell how long the exec was held.
//   first-call  ->  "main_ns=N", exit 0
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) int first_call(int value) {
  __asm__ volatile("" : "+r"(value));
  return value + 1;
}

int main(int argc, char** argv) {
  (void)argv;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int result = first_call(argc);
  printf("main_ns=%lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  return result == argc + 1 ? 0 : 1;
}
