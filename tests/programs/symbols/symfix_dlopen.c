// Loads the library named by argv[1] with dlopen once it gets SIGUSR1, the
// way plugins arrive in a running process, then waits to be killed.
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t load_requested;

static void request_load(int signal_number) {
  (void)signal_number;
  load_requested = 1;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  // SIGUSR1 stays blocked but inside sigsuspend: one that came between a
  // check of load_requested and a pause() would be missed, and the process
  // would wait for good.
  sigset_t blocked, waiting;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  sigprocmask(SIG_BLOCK, &blocked, &waiting);
  sigdelset(&waiting, SIGUSR1);
  signal(SIGUSR1, request_load);
  printf("ready\n");
  fflush(stdout);
  while (!load_requested) sigsuspend(&waiting);
  if (dlopen(argv[1], RTLD_NOW) == NULL) return 1;
  for (;;) pause();
}
