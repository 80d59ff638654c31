/* What the robustness test programs share: the start protocol of the
 * end-to-end tests (print "ready pid=N", with --wait-signal wait for
 * SIGUSR1), a clock, busy-waiting, and writing the ground truth as JSON.
 * Plain C (no C++ runtime, so no C++ exception tables and therefore
 * uretprobes on the C builds); also compiles as C++. */
#ifndef FUNCLATENCY_ROBUST_COMMON_H
#define FUNCLATENCY_ROBUST_COMMON_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct robust_options {
  const char* truth_path; /* --truth PATH: where the ground truth goes */
  int wait_signal;        /* --wait-signal: start on SIGUSR1 */
};

static inline uint64_t robust_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Busy-waits: a sleep would hand the CPU away and wake up 50-150 us late. */
static inline void robust_spin_ns(uint64_t duration_ns) {
  uint64_t end = robust_now_ns() + duration_ns;
  while (robust_now_ns() < end) {
  }
}

/* One option a program takes besides the shared ones. */
enum robust_option_kind { ROBUST_U64, ROBUST_DOUBLE, ROBUST_SWITCH };
struct robust_option {
  const char* name; /* "--calls" */
  enum robust_option_kind kind;
  void* value; /* uint64_t*, double*, or int* set to 1 for a switch */
};

/* Parses argv: the shared options into `common`, the program's own into
 * `own` (`count` entries). Returns 0, or 2 after printing bad usage. */
static inline int robust_parse_args(int argc, char** argv, struct robust_options* common,
                                    const struct robust_option* own, size_t count) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--wait-signal") == 0) {
      common->wait_signal = 1;
      continue;
    }
    if (strcmp(argv[i], "--truth") == 0 && i + 1 < argc) {
      common->truth_path = argv[++i];
      continue;
    }
    size_t k = 0;
    while (k < count && strcmp(argv[i], own[k].name) != 0) k++;
    if (k == count || (own[k].kind != ROBUST_SWITCH && i + 1 >= argc)) {
      fprintf(stderr, "%s: bad argument %s\n", argv[0], argv[i]);
      return 2;
    }
    if (own[k].kind == ROBUST_SWITCH)
      *(int*)own[k].value = 1;
    else if (own[k].kind == ROBUST_U64)
      *(uint64_t*)own[k].value = (uint64_t)strtoull(argv[++i], NULL, 10);
    else
      *(double*)own[k].value = atof(argv[++i]);
  }
  return 0;
}

/* Blocks SIGUSR1 before any thread exists, so only sigwait() sees it. */
static inline void robust_block_start_signal(void) {
  sigset_t start;
  sigemptyset(&start);
  sigaddset(&start, SIGUSR1);
  sigprocmask(SIG_BLOCK, &start, NULL);
}

static inline void robust_announce_and_wait(const struct robust_options* options) {
  printf("ready pid=%d\n", (int)getpid());
  fflush(stdout);
  if (!options->wait_signal) return;
  sigset_t start;
  sigemptyset(&start);
  sigaddset(&start, SIGUSR1);
  int signo = 0;
  sigwait(&start, &signo);
}

/* Writes `json` (one object) to the truth file, if one was asked for. */
static inline int robust_write_truth(const struct robust_options* options, const char* json) {
  if (!options->truth_path) return 0;
  FILE* file = fopen(options->truth_path, "w");
  if (!file) {
    perror(options->truth_path);
    return 1;
  }
  fputs(json, file);
  fputc('\n', file);
  return fclose(file) == 0 ? 0 : 1;
}

#endif
