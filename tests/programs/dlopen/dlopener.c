// Loads a library only after the tracer has attached, then calls one of its
// functions, so tests can check that functions of a library a process loads
// later are traced. Usage:
//   dlopener LIBRARY FUNCTION CALLS TRUTH_FILE [--pause-after-load]
// Prints "ready pid=N", waits for SIGUSR1, dlopen()s LIBRARY, calls
// FUNCTION(i) CALLS times, writes {"calls": CALLS} to TRUTH_FILE. With
// --pause-after-load it prints "loaded" after dlopen() and waits for another
// SIGUSR1 before the calls, so a tracer that attaches on seeing the library
// mapped can be given the time to.
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t started;
static void on_start(int signo) { (void)signo; started++; }

int main(int argc, char** argv) {
  int pause_after_load = argc == 6 && strcmp(argv[5], "--pause-after-load") == 0;
  if (argc != 5 && !pause_after_load) {
    fprintf(stderr, "usage: %s LIBRARY FUNCTION CALLS TRUTH_FILE [--pause-after-load]\n", argv[0]);
    return 2;
  }
  signal(SIGUSR1, on_start);
  printf("ready pid=%d\n", getpid());
  fflush(stdout);
  while (!started) pause();
  void* library = dlopen(argv[1], RTLD_NOW);
  if (!library) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  uint64_t (*function)(uint64_t) = (uint64_t(*)(uint64_t))dlsym(library, argv[2]);
  if (!function) return 1;
  if (pause_after_load) {
    printf("loaded\n");
    fflush(stdout);
    while (started < 2) pause();
  }
  long calls = atol(argv[3]);
  uint64_t sink = 0;
  for (long i = 0; i < calls; i++) sink += function((uint64_t)i);
  FILE* truth = fopen(argv[4], "w");
  if (!truth) return 1;
  fprintf(truth, "{\"calls\": %ld, \"sink\": %llu}\n", calls, (unsigned long long)sink);
  fclose(truth);
  return 0;
}
