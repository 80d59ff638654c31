/* A process to kill while its threads are inside a traced function.
 *
 * robust-stuck --block-threads K   K threads enter stuck_op() and block
 *                                  there; prints "inside K" once all are in.
 * robust-stuck --exit-inside       one thread calls exit from inside stuck_op()
 * robust-stuck --calls N           N ordinary calls of about 200 us each
 * With --truth, the calls that returned are written as ground truth. */
#include <inttypes.h>
#include <pthread.h>

#include "robust_common.h"

enum behaviour { RETURN_SOON, BLOCK_FOREVER, EXIT_INSIDE };

static int blocker_pipe[2];
static volatile int threads_inside;

__attribute__((noinline)) uint64_t stuck_op(int behaviour, uint64_t value) {
  if (behaviour == BLOCK_FOREVER) {
    __atomic_add_fetch(&threads_inside, 1, __ATOMIC_SEQ_CST);
    char byte;
    while (read(blocker_pipe[0], &byte, 1) != 0) {
    }
  } else if (behaviour == EXIT_INSIDE) {
    printf("exiting inside\n");
    fflush(stdout);
    _exit(0);
  } else {
    robust_spin_ns(200000);
  }
  __asm__ volatile("" : "+r"(value));
  return value + 1;
}

static void* block_in_stuck_op(void* unused) {
  (void)unused;
  stuck_op(BLOCK_FOREVER, 0);
  return NULL;
}

int main(int argc, char** argv) {
  struct robust_options options = {NULL, 0};
  uint64_t calls = 0, block_threads = 0;
  int exit_inside = 0;
  const struct robust_option own[] = {
      {"--calls", ROBUST_U64, &calls},
      {"--block-threads", ROBUST_U64, &block_threads},
      {"--exit-inside", ROBUST_SWITCH, &exit_inside},
  };
  if (robust_parse_args(argc, argv, &options, own, sizeof own / sizeof own[0])) return 2;
  robust_block_start_signal();
  if (pipe(blocker_pipe) != 0) return 1;
  robust_announce_and_wait(&options);

  for (uint64_t t = 0; t < block_threads; t++) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, block_in_stuck_op, NULL) != 0) return 1;
  }
  if (block_threads) {
    while (__atomic_load_n(&threads_inside, __ATOMIC_SEQ_CST) < (int)block_threads) usleep(1000);
    printf("inside %" PRIu64 "\n", block_threads);
    fflush(stdout);
    for (;;) pause();
  }
  uint64_t sink = 0;
  for (uint64_t i = 0; i < calls; i++) sink += stuck_op(RETURN_SOON, i);
  __asm__ volatile("" : : "r"(sink));
  if (exit_inside) stuck_op(EXIT_INSIDE, 0);
  char json[256];
  snprintf(json, sizeof json,
           "{\"program\": \"robust-stuck\", \"functions\": [{\"name\": \"stuck_op\", \"calls\": "
           "%" PRIu64 "}]}",
           calls);
  return robust_write_truth(&options, json);
}
