/* The context-switch workload: two processes, pinned to one CPU, bounce a
 * byte over two pipes N times. Each round trip is at least two context
 * switches (parent -> child, child -> parent), so what the machine adds to a
 * switch (a sched_switch BPF program: funclatency --cpu-split) shows up in
 * the time per round trip.
 *
 * Both processes warm up briefly, then time the round trips with their
 * own clocks: the parent the wall time (CLOCK_MONOTONIC), each process its
 * CPU time (CLOCK_PROCESS_CPUTIME_ID) and its context switches (getrusage:
 * ru_nvcsw + ru_nivcsw, the counters of /proc/PID/status). The child sends
 * its figures back over the pipe at the end. One result line:
 *   round_trips=N wall_ns_per_round_trip=X cpu_ns_per_round_trip=Y
 *   switches=S switches_per_round_trip=Z cpu=C */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARM_UP 1000

struct figures {
  uint64_t cpu_ns;
  uint64_t switches;
};

static uint64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t switches_now(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return (uint64_t)usage.ru_nvcsw + (uint64_t)usage.ru_nivcsw;
}

static struct figures snapshot(void) {
  return (struct figures){.cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID), .switches = switches_now()};
}

static struct figures since(struct figures start) {
  struct figures end = snapshot();
  return (struct figures){.cpu_ns = end.cpu_ns - start.cpu_ns,
                          .switches = end.switches - start.switches};
}

static int full_io(int fd, void* buf, size_t len, int writing) {
  char* p = buf;
  while (len > 0) {
    ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* One side's loop: `first` writes then reads, the other reads then writes. */
static int bounce(int in, int out, uint64_t count, int first) {
  char byte = 'x';
  for (uint64_t i = 0; i < count; i++) {
    if (first && full_io(out, &byte, 1, 1)) return -1;
    if (full_io(in, &byte, 1, 0)) return -1;
    if (!first && full_io(out, &byte, 1, 1)) return -1;
  }
  return 0;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: pingpong [-n ROUND_TRIPS] [-c CPU]\n"
          "  -n  round trips (default 100000)   -c  the CPU both processes run on (default 0)\n");
}

int main(int argc, char** argv) {
  uint64_t round_trips = 100000;
  int cpu = 0;
  int opt;
  while ((opt = getopt(argc, argv, "n:c:h")) != -1) {
    switch (opt) {
      case 'n':
        round_trips = strtoull(optarg, NULL, 10);
        break;
      case 'c':
        cpu = atoi(optarg);
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (round_trips == 0 || cpu < 0 || cpu >= CPU_SETSIZE) {
    usage(stderr);
    return 2;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set)) { /* the child inherits it */
    fprintf(stderr, "pingpong: sched_setaffinity(CPU %d): %s\n", cpu, strerror(errno));
    return 1;
  }
  int to_child[2], to_parent[2];
  if (pipe(to_child) || pipe(to_parent)) {
    perror("pingpong: pipe");
    return 1;
  }
  pid_t child = fork();
  if (child < 0) {
    perror("pingpong: fork");
    return 1;
  }
  if (child == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    if (bounce(to_child[0], to_parent[1], WARM_UP, 0)) _exit(1);
    struct figures start = snapshot();
    if (bounce(to_child[0], to_parent[1], round_trips, 0)) _exit(1);
    struct figures mine = since(start);
    _exit(full_io(to_parent[1], &mine, sizeof(mine), 1) ? 1 : 0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  if (bounce(to_parent[0], to_child[1], WARM_UP, 1)) return 1;
  struct figures start = snapshot();
  uint64_t wall0 = now_ns(CLOCK_MONOTONIC);
  if (bounce(to_parent[0], to_child[1], round_trips, 1)) return 1;
  uint64_t wall = now_ns(CLOCK_MONOTONIC) - wall0;
  struct figures mine = since(start);
  struct figures theirs;
  int status = 0;
  if (full_io(to_parent[0], &theirs, sizeof(theirs), 0) || waitpid(child, &status, 0) != child ||
      !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "pingpong: the child failed\n");
    return 1;
  }
  uint64_t switches = mine.switches + theirs.switches;
  printf("round_trips=%" PRIu64 " wall_ns_per_round_trip=%.1f cpu_ns_per_round_trip=%.1f"
         " switches=%" PRIu64 " switches_per_round_trip=%.3f cpu=%d\n",
         round_trips, (double)wall / (double)round_trips,
         (double)(mine.cpu_ns + theirs.cpu_ns) / (double)round_trips, switches,
         (double)switches / (double)round_trips, cpu);
  return 0;
}
