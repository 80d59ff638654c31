// Calls phased_op() at a sequence of rates, so tests can drive funclatency's
// auto mode across its threshold and back. Usage:
//   phased --truth FILE RATE:SECONDS [RATE:SECONDS...]
// Prints "ready pid=N", waits for SIGUSR1, runs the phases, writes
// {"calls": N} to FILE and exits.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t started;
static void on_start(int signo) { (void)signo; started = 1; }

__attribute__((noinline)) void phased_op(void) { __asm__ volatile("" ::: "memory"); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 4 || strcmp(argv[1], "--truth") != 0) {
    fprintf(stderr, "usage: %s --truth FILE RATE:SECONDS...\n", argv[0]);
    return 2;
  }
  signal(SIGUSR1, on_start);
  printf("ready pid=%d\n", getpid());
  fflush(stdout);
  while (!started) pause();
  unsigned long calls = 0;
  for (int i = 3; i < argc; i++) {
    double rate = 0, seconds = 0;
    if (sscanf(argv[i], "%lf:%lf", &rate, &seconds) != 2 || rate <= 0) return 2;
    double start = now_s();
    unsigned long phase_calls = 0;
    for (;;) {
      double elapsed = now_s() - start;
      if (elapsed >= seconds) break;
      // Keep up with the schedule; sleep when ahead of it.
      if (phase_calls < elapsed * rate) {
        phased_op();
        phase_calls++;
      } else {
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
      }
    }
    calls += phase_calls;
  }
  FILE* truth = fopen(argv[2], "w");
  if (!truth) return 1;
  fprintf(truth, "{\"calls\": %lu}\n", calls);
  fclose(truth);
  return 0;
}
