/* seccomp-refuse: runs a command under a seccomp filter that refuses some
 * system calls with an errno, the way a container runtime's seccomp profile
 * refuses bpf() or perf_event_open(). The test of a wrong deployment
 * (tests/e2e/test_deployment_errors.py) runs funclatency under it, holding
 * every capability, and wants one line that names seccomp.
 *
 *   seccomp-refuse bpf,perf_event_open EPERM -- funclatency ...
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_REFUSED 8

static int syscall_number(const char* name) {
  if (strcmp(name, "bpf") == 0) return __NR_bpf;
  if (strcmp(name, "perf_event_open") == 0) return __NR_perf_event_open;
  return -1;
}

static int errno_value(const char* name) {
  if (strcmp(name, "EPERM") == 0) return EPERM;
  if (strcmp(name, "EACCES") == 0) return EACCES;
  if (strcmp(name, "ENOSYS") == 0) return ENOSYS;
  return -1;
}

static void usage(void) {
  fputs("usage: seccomp-refuse bpf|perf_event_open[,...] EPERM|EACCES|ENOSYS -- COMMAND [ARG...]\n",
        stderr);
  exit(2);
}

int main(int argc, char** argv) {
  if (argc < 5 || strcmp(argv[3], "--") != 0) usage();
  int refused[MAX_REFUSED];
  int count = 0;
  char* names = strdup(argv[1]);
  for (char* name = strtok(names, ","); name; name = strtok(NULL, ",")) {
    if (count == MAX_REFUSED || (refused[count] = syscall_number(name)) < 0) usage();
    count++;
  }
  const int err = errno_value(argv[2]);
  if (err < 0) usage();

  /* Not x86-64: allowed (the numbers are x86-64's). Then one compare per
   * refused call; anything else is allowed. */
  struct sock_filter program[4 + 2 * MAX_REFUSED + 1];
  int n = 0;
  program[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  program[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < count; i++) {
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, refused[i], 0, 1);
    program[n++] =
        (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
  }
  program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog fprog = {.len = (unsigned short)n, .filter = program};

  /* With CAP_SYS_ADMIN no no_new_privs is needed, as for a runtime that
   * installs the filter for a privileged container; without it, set it. */
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    if (errno != EACCES || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
      perror("seccomp-refuse: install the filter");
      return 2;
    }
  }
  execvp(argv[4], argv + 4);
  perror("seccomp-refuse: exec");
  return 127;
}
