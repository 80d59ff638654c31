// Loads a library only after the tracer has attached, then calls one of its
// functions, so tests can check that functions of a library a process loads
// later are traced. Usage:
//   dlopener LIBRARY FUNCTION CALLS TRUTH_FILE
// Prints "ready pid=N", waits for SIGUSR1, dlopen()s LIBRARY, calls
// FUNCTION(i) CALLS times, writes {"calls": CALLS} to TRUTH_FILE.
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t started;
static void on_start(int signo) { (void)signo; started = 1; }

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s LIBRARY FUNCTION CALLS TRUTH_FILE\n", argv[0]);
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
  long calls = atol(argv[3]);
  uint64_t sink = 0;
  for (long i = 0; i < calls; i++) sink += function((uint64_t)i);
  FILE* truth = fopen(argv[4], "w");
  if (!truth) return 1;
  fprintf(truth, "{\"calls\": %ld, \"sink\": %llu}\n", calls, (unsigned long long)sink);
  fclose(truth);
  return 0;
}
