// Why: a thread that ends inside a traced call (pthread_exit from inside it)
// leaves a frame no later call of that thread can show abandoned; the
// tracer must still count the call lost (calls counted + lost = calls made).
// --threads threads each make --calls calls of thread_exit_op() that return,
// then one that calls pthread_exit() inside; then the process exits.
//   thread-exit [--wait-signal] --truth FILE [--threads N] [--calls N]
// Prints "ready pid=N" (with --wait-signal waits for SIGUSR1). The truth:
// {"functions":[{"name":"thread_exit_op","calls":C,"returned":R,"abandoned":A}]}
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "program_options.h"

static volatile uint64_t sink;
static unsigned long calls_per_thread = 100;

// The traced function: returns, or ends its thread from inside.
__attribute__((noinline)) uint64_t thread_exit_op(uint64_t value, int end_thread) {
  if (end_thread) pthread_exit(NULL);
  for (uint64_t i = 0; i < 100; i++) value = value * 31 + i;
  return value;
}

static void* run_thread(void* arg) {
  (void)arg;
  for (unsigned long i = 0; i < calls_per_thread; i++) sink = sink + thread_exit_op(i, 0);
  sink = sink + thread_exit_op(0, 1);
  return NULL;  // never reached
}

int main(int argc, char** argv) {
  const char* truth_path = text_option(argc, argv, "--truth");
  const char* threads_text = text_option(argc, argv, "--threads");
  const char* calls_text = text_option(argc, argv, "--calls");
  const unsigned long threads = threads_text ? strtoul(threads_text, NULL, 10) : 4;
  if (calls_text) calls_per_thread = strtoul(calls_text, NULL, 10);
  if (truth_path == NULL || threads == 0 || threads > 64) {
    fprintf(stderr, "usage: %s [--wait-signal] --truth FILE [--threads N] [--calls N]\n", argv[0]);
    return 2;
  }
  announce_ready(flag_option(argc, argv, "--wait-signal"));
  pthread_t ids[64];
  for (unsigned long i = 0; i < threads; i++) {
    if (pthread_create(&ids[i], NULL, run_thread, NULL) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  for (unsigned long i = 0; i < threads; i++) pthread_join(ids[i], NULL);
  FILE* truth = fopen(truth_path, "w");
  if (truth == NULL) {
    perror(truth_path);
    return 1;
  }
  const unsigned long returned = threads * calls_per_thread;
  fprintf(truth,
          "{\"functions\":[{\"name\":\"thread_exit_op\",\"calls\":%lu,\"returned\":%lu,"
          "\"abandoned\":%lu}]}\n",
          returned + threads, returned, threads);
  return fclose(truth) == 0 ? 0 : 1;
}
