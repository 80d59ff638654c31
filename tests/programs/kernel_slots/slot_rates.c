// slot-rates: 300 functions called at different rates, for the kernel-slot
// tests (tests/e2e/test_kernel_slots.py). slots_hot_0 ... slots_hot_9 are hot:
// slots_hot_K is called ((3 K) mod 10 + 1) * --hot-rate times a second (so
// their order by rate is not their order in the file: 1, 4, 7, 10, 3, 6, 9,
// 2, 5, 8 times); the 290 cold ones, slots_cold_000 ... slots_cold_289,
// --cold-rate times a second each. Calls are
// paced, not made in a free loop: a function that finds no kernel slot stays
// in events mode, and the ring buffer must keep up for its count to be exact.
//
// After --seconds, an optional second phase of --then-seconds calls only the
// hot functions from --then-hot-from on (the others calm down and give their
// slots back) and the cold ones.
//
// Usage: slot-rates [--wait-signal] [--truth FILE] [--seconds S] [--hot-rate R]
//                   [--cold-rate R] [--then-seconds S] [--then-hot-from K]
// Prints "ready pid=N"; with --wait-signal starts on SIGUSR1; writes
// {"program", "pid", "functions": [{"name", "calls", "returned", "rate",
// "achieved"}]} to FILE, "rate" being the first phase's calls/s as asked and
// "achieved" as made (a traced call costs microseconds: asked too much, the
// program falls behind and its hot functions all run at the same pace).
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long (*slot_fn)(unsigned long);

#include "many_functions.h"
#include "program_options.h"

// slots_cold_000 ... slots_cold_289, then slots_hot_0 ... slots_hot_9.
#define ALL(F)                                                                      \
  HUNDRED(F, slots_cold_0, 0)                                                       \
  HUNDRED(F, slots_cold_1, 1)                                                       \
  TEN(F, slots_cold_20, 20)                                                         \
  TEN(F, slots_cold_21, 21) TEN(F, slots_cold_22, 22) TEN(F, slots_cold_23, 23)     \
      TEN(F, slots_cold_24, 24) TEN(F, slots_cold_25, 25) TEN(F, slots_cold_26, 26) \
          TEN(F, slots_cold_27, 27) TEN(F, slots_cold_28, 28) TEN(F, slots_hot_, 1000)

ALL(DEFINE)

static const struct {
  const char* name;
  slot_fn fn;
} kFunctions[] = {ALL(ENTRY)};
enum { kCount = sizeof(kFunctions) / sizeof(kFunctions[0]), kCold = 290, kHot = kCount - kCold };
_Static_assert(kCount == 300, "300 functions");

static volatile sig_atomic_t started;
static void on_start(int signo) {
  (void)signo;
  started = 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long calls[kCount];
static unsigned long checksum;

// Calls each function at its rate (0: not at all) for `seconds`; adds to
// calls[], and returns through `made_out` (if given) what this phase made.
static void run_phase(const double* rates, double seconds, unsigned long* made_out) {
  unsigned long made[kCount] = {0};
  const double start = now_s();
  for (;;) {
    const double elapsed = now_s() - start;
    if (elapsed >= seconds) break;
    int behind = 0;
    for (int i = 0; i < kCount; i++) {
      // At most 50 calls of one function at a time, so all keep their pace.
      for (int n = 0; n < 50 && made[i] < elapsed * rates[i]; n++) {
        checksum += kFunctions[i].fn(made[i]);
        made[i]++;
        behind = 1;
      }
    }
    if (!behind) {
      struct timespec nap = {0, 200000};
      nanosleep(&nap, NULL);
    }
  }
  for (int i = 0; i < kCount; i++) calls[i] += made[i];
  if (made_out) memcpy(made_out, made, sizeof(made));
}

static double option(int argc, char** argv, const char* name, double fallback) {
  const char* text = text_option(argc, argv, name);
  return text ? atof(text) : fallback;
}

int main(int argc, char** argv) {
  int wait_signal = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--wait-signal") == 0) wait_signal = 1;
    if (strcmp(argv[i], "--help") == 0) {
      fprintf(stderr,
              "usage: %s [--wait-signal] [--truth FILE] [--seconds S] [--hot-rate R] "
              "[--cold-rate R] [--then-seconds S] [--then-hot-from K]\n",
              argv[0]);
      return 0;
    }
  }
  const char* truth_path = text_option(argc, argv, "--truth");
  const double seconds = option(argc, argv, "--seconds", 3);
  const double hot_rate = option(argc, argv, "--hot-rate", 1000);
  const double cold_rate = option(argc, argv, "--cold-rate", 2);
  const double then_seconds = option(argc, argv, "--then-seconds", 0);
  const int then_hot_from = (int)option(argc, argv, "--then-hot-from", 5);

  signal(SIGUSR1, on_start);
  printf("ready pid=%d\n", getpid());
  fflush(stdout);
  while (wait_signal && !started) pause();

  double rates[kCount];
  for (int i = 0; i < kCount; i++) {
    rates[i] = i < kCold ? cold_rate : ((3 * (i - kCold)) % 10 + 1) * hot_rate;
  }
  double first_rates[kCount];
  memcpy(first_rates, rates, sizeof(rates));
  unsigned long first_made[kCount];
  run_phase(rates, seconds, first_made);
  if (then_seconds > 0) {
    for (int k = 0; k < then_hot_from && k < kHot; k++) rates[kCold + k] = 0;
    run_phase(rates, then_seconds, NULL);
  }

  printf("checksum %lu\n", checksum);
  if (truth_path == NULL) return 0;
  FILE* truth = fopen(truth_path, "w");
  if (truth == NULL) return 1;
  fprintf(truth, "{\"program\": \"slot-rates\", \"pid\": %d, \"functions\": [", getpid());
  for (int i = 0; i < kCount; i++) {
    fprintf(truth,
            "%s{\"name\": \"%s\", \"calls\": %lu, \"returned\": %lu, \"rate\": %g, "
            "\"achieved\": %.1f}",
            i ? ", " : "", kFunctions[i].name, calls[i], calls[i], first_rates[i],
            seconds > 0 ? first_made[i] / seconds : 0.0);
  }
  fprintf(truth, "]}\n");
  return fclose(truth) == 0 ? 0 : 1;
}
