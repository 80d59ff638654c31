// Links libsymfix and waits, so tests find the library in its mappings.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int symfix_lib_work(int x);

int main(void) {
  printf("work=%d\nready\n", symfix_lib_work(1));
  fflush(stdout);
  for (;;) pause();
}
