/* A program whose traced function's symbol is not UTF-8: odd_op's ELF name
 * is "odd_op" followed by the byte 0xFF (an asm label), as a symbol table may
 * hold any bytes. tests/e2e/test_odd_names.py traces it, also from a folder
 * whose name is not UTF-8, through every output.
 *
 *   odd-names CALLS   prints "ready pid=N", waits for SIGUSR1, calls odd_op
 *                     CALLS times (about 1 ms each), prints "done SUM", and
 *                     exits at the next SIGUSR1 (so exporters can be read).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int odd_op(int x) __asm__("odd_op\xff");

__attribute__((noinline)) int odd_op(int x) {
  struct timespec nap = {0, 1000 * 1000};
  nanosleep(&nap, NULL);
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}

static volatile sig_atomic_t signals;

static void on_signal(int signo) {
  (void)signo;
  signals++;
}

int main(int argc, char** argv) {
  long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
  sigset_t usr1, waiting;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, &waiting); /* a signal before sigsuspend waits */
  signal(SIGUSR1, on_signal);
  printf("ready pid=%d\n", (int)getpid());
  fflush(stdout);
  while (signals < 1) sigsuspend(&waiting);
  int sum = 0;
  for (long i = 0; i < calls; i++) sum = odd_op(sum);
  printf("done %d\n", sum);
  fflush(stdout);
  while (signals < 2) sigsuspend(&waiting);
  return 0;
}
