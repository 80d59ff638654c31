// Why: slow-call stacks of a process that exits right after its slow calls
// used to come back as a bare address (its /proc/PID/maps was read when the
// record was resolved, and the process was gone by then). This program makes
// --calls calls of exit_fast_call(), the last --slow of them slow (100 ms
// each, through slow_caller), writes its ground truth and exits at once
// with _exit: no atexit work, nothing to give a tracer time.
//   exit-fast [--wait-signal] --truth FILE [--calls N] [--slow N]
//             [--plugin PATH] [--pause-before-slow]
// Prints "ready pid=N" (and with --wait-signal waits for SIGUSR1).
// --plugin: dlopen PATH (libexit-fast-plugin.so) before any call, and make
// the slow calls through its plugin_slow_path (slow_caller -> plugin ->
// exit_fast_call): code mapped from the start that no fast call's stack
// passes through. --pause-before-slow: after the fast calls print
// "fast calls done" and wait for SIGUSR1 (a test stops the tracer then, so
// that it names the slow calls' stacks only after the exit). The truth:
// {"functions":[{"name":"exit_fast_call","returned":N,"slow":S,
//   "slow_ns":[caller-measured duration of each slow call],
//   "fast_max_ns": the longest fast call as its caller measured it}]}
// (a tracer's duration of a call is at most its caller's measure, so an
// exemplar longer than fast_max_ns is one of the slow calls).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "program_options.h"

#define SLOW_NS 100000000L
#define MAX_SLOW 64

static volatile uint64_t sink;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// The traced function. Its result is used after the call, so no caller
// reaches it by a tail jump and their frames stay on the stack.
__attribute__((noinline)) uint64_t exit_fast_call(uint64_t work, int slow) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < work; i++) acc += i * i ^ (acc >> 3);
  if (slow) {
    const struct timespec pause = {0, SLOW_NS};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, NULL);
  }
  return acc;
}

// --plugin: plugin_slow_path of the plugin, which calls exit_fast_call.
typedef uint64_t (*plugin_path_fn)(uint64_t work, uint64_t (*call)(uint64_t, int));
static plugin_path_fn plugin_path;

__attribute__((noinline)) uint64_t slow_caller(uint64_t i) {
  const uint64_t result =
      plugin_path ? plugin_path(50 + i % 7, exit_fast_call) : exit_fast_call(50 + i % 7, 1);
  sink = sink + result;
  return result + 1;
}

int main(int argc, char** argv) {
  const char* truth_path = text_option(argc, argv, "--truth");
  const char* calls_text = text_option(argc, argv, "--calls");
  const char* slow_text = text_option(argc, argv, "--slow");
  const unsigned long calls = calls_text ? strtoul(calls_text, NULL, 10) : 6000;
  const unsigned long slow = slow_text ? strtoul(slow_text, NULL, 10) : 6;
  if (truth_path == NULL || slow > MAX_SLOW || slow > calls) {
    fprintf(stderr, "usage: %s [--wait-signal] --truth FILE [--calls N] [--slow N]\n", argv[0]);
    return 2;
  }
  // Opened before the calls, so that writing it after them is quick.
  FILE* truth = fopen(truth_path, "w");
  if (truth == NULL) {
    perror(truth_path);
    return 1;
  }
  const char* plugin = text_option(argc, argv, "--plugin");
  if (plugin != NULL) {
    void* handle = dlopen(plugin, RTLD_NOW);
    if (handle == NULL ||
        (plugin_path = (plugin_path_fn)dlsym(handle, "plugin_slow_path")) == NULL) {
      fprintf(stderr, "exit-fast: %s: %s\n", plugin, dlerror());
      return 1;
    }
  }
  announce_ready(flag_option(argc, argv, "--wait-signal"));
  unsigned long returned = 0;
  uint64_t fast_max_ns = 0;
  for (unsigned long i = 0; i + slow < calls; i++, returned++) {
    const uint64_t start = now_ns();
    sink = sink + exit_fast_call(50 + i % 7, 0);
    const uint64_t took = now_ns() - start;
    if (took > fast_max_ns) fast_max_ns = took;
  }
  if (flag_option(argc, argv, "--pause-before-slow")) {
    program_started = 0;
    printf("fast calls done\n");
    fflush(stdout);
    while (!program_started) pause();
  }
  uint64_t slow_ns[MAX_SLOW];
  for (unsigned long i = 0; i < slow; i++, returned++) {
    const uint64_t start = now_ns();
    sink = sink + slow_caller(i);
    slow_ns[i] = now_ns() - start;
  }
  fprintf(
      truth,
      "{\"functions\":[{\"name\":\"exit_fast_call\",\"returned\":%lu,\"slow\":%lu,\"slow_ns\":[",
      returned, slow);
  for (unsigned long i = 0; i < slow; i++)
    fprintf(truth, "%s%llu", i ? "," : "", (unsigned long long)slow_ns[i]);
  fprintf(truth, "],\"fast_max_ns\":%llu}]}\n", (unsigned long long)fast_max_ns);
  if (fclose(truth) != 0) return 1;
  _exit(0);
}
