/* Process churn for the end-to-end tests.
 *
 * Worker:   robust-churn --calls N [--fork | --exec]
 *   calls churn_op() N times and exits; --fork: then forks a child that calls
 *   it N more times; --exec: then execs itself (a fresh image) for N more.
 * Launcher: robust-churn --spawn-rate R --spawn-seconds S --calls N [--truth P]
 *   starts R workers a second for S seconds, rotating plain, fork and exec,
 *   and writes how many churn_op calls the workers that succeeded made. */
#include <errno.h>
#include <inttypes.h>
#include <sys/wait.h>

#include "robust_common.h"

__attribute__((noinline)) uint64_t churn_op(uint64_t value) {
  robust_spin_ns(2000);
  __asm__ volatile("" : "+r"(value));
  return value * 3 + 1;
}

enum variant { PLAIN, FORK, EXEC, VARIANTS };
static const char* const variant_flags[VARIANTS] = {NULL, "--fork", "--exec"};

static uint64_t call_many(uint64_t calls) {
  uint64_t sink = 0;
  for (uint64_t i = 0; i < calls; i++) sink += churn_op(i);
  return sink;
}

static int run_worker(const char* self, uint64_t calls, enum variant variant) {
  uint64_t sink = call_many(calls);
  __asm__ volatile("" : : "r"(sink));
  if (variant == FORK) {
    pid_t child = fork();
    if (child < 0) return 3;
    if (child == 0) {
      call_many(calls);
      _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return 4;
  } else if (variant == EXEC) {
    char count[32];
    snprintf(count, sizeof count, "%" PRIu64, calls);
    execl(self, self, "--calls", count, (char*)NULL);
    return 5;
  }
  return 0;
}

static uint64_t calls_of(enum variant variant, uint64_t calls) {
  return variant == PLAIN ? calls : 2 * calls;
}

struct launch_result {
  uint64_t started, failed, calls;
};

/* Reaps every finished worker; with `block`, waits for all of them. */
static void reap(struct launch_result* result, pid_t* pids, enum variant* variants, uint64_t n,
                 uint64_t calls, int block) {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);
    if (pid <= 0) return;
    for (uint64_t i = 0; i < n; i++) {
      if (pids[i] != pid) continue;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        result->calls += calls_of(variants[i], calls);
      else
        result->failed++;
      pids[i] = 0;
      break;
    }
  }
}

static int run_launcher(const char* self, double rate, double seconds, uint64_t calls,
                        const struct robust_options* options) {
  uint64_t total = (uint64_t)(rate * seconds);
  pid_t* pids = calloc(total ? total : 1, sizeof *pids);
  enum variant* variants = calloc(total ? total : 1, sizeof *variants);
  struct launch_result result = {0, 0, 0};
  char count[32];
  snprintf(count, sizeof count, "%" PRIu64, calls);
  uint64_t start = robust_now_ns();
  for (uint64_t i = 0; i < total; i++) {
    uint64_t due = start + (uint64_t)((double)i * 1e9 / rate);
    for (uint64_t now = robust_now_ns(); now < due; now = robust_now_ns()) {
      struct timespec pause = {0, (long)(due - now)};
      nanosleep(&pause, NULL);
    }
    variants[i] = (enum variant)(i % VARIANTS);
    pid_t pid = fork();
    if (pid < 0) {
      result.failed++;
      continue;
    }
    if (pid == 0) {
      const char* flag = variant_flags[variants[i]];
      execl(self, self, "--calls", count, flag, (char*)NULL);
      _exit(127);
    }
    pids[i] = pid;
    result.started++;
    reap(&result, pids, variants, total, calls, 0);
  }
  reap(&result, pids, variants, total, calls, 1);
  double elapsed = (double)(robust_now_ns() - start) / 1e9;
  char json[512];
  snprintf(json, sizeof json,
           "{\"program\": \"robust-churn\", \"processes\": %" PRIu64 ", \"failed\": %" PRIu64
           ", \"seconds\": %.3f, \"functions\": [{\"name\": \"churn_op\", \"calls\": %" PRIu64
           "}]}",
           result.started, result.failed, elapsed, result.calls);
  free(pids);
  free(variants);
  return robust_write_truth(options, json);
}

int main(int argc, char** argv) {
  struct robust_options options = {NULL, 0};
  uint64_t calls = 10;
  double rate = 0, seconds = 0;
  int fork_after = 0, exec_after = 0;
  const struct robust_option own[] = {
      {"--calls", ROBUST_U64, &calls},
      {"--spawn-rate", ROBUST_DOUBLE, &rate},
      {"--spawn-seconds", ROBUST_DOUBLE, &seconds},
      {"--fork", ROBUST_SWITCH, &fork_after},
      {"--exec", ROBUST_SWITCH, &exec_after},
  };
  if (robust_parse_args(argc, argv, &options, own, sizeof own / sizeof own[0])) return 2;
  enum variant variant = fork_after ? FORK : exec_after ? EXEC : PLAIN;
  if (rate <= 0) return run_worker("/proc/self/exe", calls, variant);
  robust_block_start_signal();
  robust_announce_and_wait(&options);
  return run_launcher("/proc/self/exe", rate, seconds, calls, &options);
}
