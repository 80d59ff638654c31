/* Command-line options of the small C test programs (slot-rates,
 * refused-probes, exit-fast): the value after NAME, if given; and the
 * workload protocol's start (print "ready pid=N", with --wait-signal wait
 * for SIGUSR1). */
#ifndef FUNCLATENCY_TEST_PROGRAM_OPTIONS_H
#define FUNCLATENCY_TEST_PROGRAM_OPTIONS_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline const char* text_option(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return NULL;
}

static inline int flag_option(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], name) == 0) return 1;
  }
  return 0;
}

static volatile sig_atomic_t program_started;
static inline void program_on_start(int signo) {
  (void)signo;
  program_started = 1;
}

/* Says "ready pid=N"; with wait_signal, returns once SIGUSR1 came. */
static inline void announce_ready(int wait_signal) {
  signal(SIGUSR1, program_on_start);
  printf("ready pid=%d\n", getpid());
  fflush(stdout);
  while (wait_signal && !program_started) pause();
}

#endif
