/* The benchmark's workload: one tiny noinline function called N times in a
 * tight loop, in one or more threads, reporting what a call costs.
 *
 * Three variants share one body (push %rbp; mov %rsp,%rbp; a store and a
 * load of the argument; lea; pop %rbp; ret)
 * and differ only in what comes first, because the first instruction decides
 * how the kernel handles an entry probe there:
 *   nop5   0f 1f 44 00 00  the kernel can turn the probe into a call
 *   push   push %rbp       emulated
 *   endbr  endbr64         single-stepped (funclatency probes after it)
 * The file is compiled with -fcf-protection=branch and
 * -fno-omit-frame-pointer; `nocf_check` drops the endbr64 from the
 * variants that must not start with one. At startup each variant's first
 * bytes are checked, so a compiler that lays them out differently fails
 * loudly instead of measuring the wrong thing.
 *
 * Protocol with bench/run: the target prints "ready PID" and waits for a line
 * on stdin (so a tracer can attach first), runs, prints one result line per
 * thread and one summary line, and exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A naked function: the compiler adds nothing, so the 5-byte nop is really
 * the first instruction. The rest is the body the compiler gives the others. */
__attribute__((naked, noipa, nocf_check, used)) uint64_t hot_nop5(uint64_t x) {
  __asm__(
      ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"
      "push %rbp\n\t"
      "mov %rsp, %rbp\n\t"
      "mov %rdi, -8(%rbp)\n\t"
      "mov -8(%rbp), %rax\n\t"
      "lea 1(%rax,%rax,2), %rax\n\t"
      "pop %rbp\n\t"
      "ret\n\t");
}

/* The volatile local gives the function a frame, so with
 * -fno-omit-frame-pointer it starts with `push %rbp` even though it is a leaf. */
__attribute__((noipa, nocf_check, used)) uint64_t hot_push(uint64_t x) {
  volatile uint64_t spilled = x;
  return spilled * 3 + 1;
}

__attribute__((noipa, used)) uint64_t hot_endbr(uint64_t x) {
  volatile uint64_t spilled = x;
  return spilled * 3 + 1;
}

enum variant_id { VARIANT_NOP5, VARIANT_PUSH, VARIANT_ENDBR };

struct variant {
  enum variant_id id;
  const char* name;
  const void* code;
  const uint8_t expected[5];
  size_t expected_len;
};

static const struct variant kVariants[] = {
    {VARIANT_NOP5, "nop5", (const void*)hot_nop5, {0x0f, 0x1f, 0x44, 0x00, 0x00}, 5},
    {VARIANT_PUSH, "push", (const void*)hot_push, {0x55}, 1},
    {VARIANT_ENDBR, "endbr", (const void*)hot_endbr, {0xf3, 0x0f, 0x1e, 0xfa, 0x55}, 5},
};

/* Direct calls (noipa keeps them calls): an indirect call to a function
 * without endbr64 would be wrong in a CET build. */
static uint64_t call_range(enum variant_id id, uint64_t first, uint64_t count) {
  uint64_t acc = 0;
  switch (id) {
    case VARIANT_NOP5:
      for (uint64_t i = first; i < first + count; i++) acc += hot_nop5(i);
      break;
    case VARIANT_PUSH:
      for (uint64_t i = first; i < first + count; i++) acc += hot_push(i);
      break;
    case VARIANT_ENDBR:
      for (uint64_t i = first; i < first + count; i++) acc += hot_endbr(i);
      break;
  }
  return acc;
}
#define NUM_VARIANTS (sizeof(kVariants) / sizeof(kVariants[0]))

static const struct variant* find_variant(const char* name) {
  for (size_t i = 0; i < NUM_VARIANTS; i++) {
    if (strcmp(kVariants[i].name, name) == 0) return &kVariants[i];
  }
  return NULL;
}

static bool starts_as_expected(const struct variant* v) {
  return memcmp(v->code, v->expected, v->expected_len) == 0;
}

/* File offset of a code address, from /proc/self/maps: what a uprobe takes. */
static bool file_offset_of(const void* address, uint64_t* offset, char* path, size_t path_len) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) return false;
  char line[4096];
  bool found = false;
  uintptr_t target = (uintptr_t)address;
  while (!found && fgets(line, sizeof(line), maps)) {
    uintptr_t start, end;
    unsigned long long map_offset;
    int name_at = 0;
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %llx %*s %*s %n", &start, &end, &map_offset,
               &name_at) < 3) {
      continue;
    }
    if (target < start || target >= end) continue;
    *offset = target - start + map_offset;
    snprintf(path, path_len, "%s", line + name_at);
    path[strcspn(path, "\n")] = '\0';
    found = true;
  }
  fclose(maps);
  return found;
}

static uint64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct worker {
  pthread_t thread;
  enum variant_id variant;
  uint64_t calls;
  double calls_per_sec; /* 0: as fast as possible */
  pthread_barrier_t* start;
  uint64_t wall_ns;
  uint64_t cpu_ns;
  uint64_t sink;
};

/* Calls in bursts of this many between clock checks when rate-limited. */
#define BURST 50

static void* run_worker(void* arg) {
  struct worker* w = arg;
  uint64_t acc = 0;
  pthread_barrier_wait(w->start);
  uint64_t wall0 = now_ns(CLOCK_MONOTONIC);
  uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  if (w->calls_per_sec <= 0) {
    acc = call_range(w->variant, 0, w->calls);
  } else {
    /* Keep the cumulative schedule: burst k starts at k * BURST / rate. */
    double ns_per_call = 1e9 / w->calls_per_sec;
    for (uint64_t done = 0; done < w->calls;) {
      uint64_t due = wall0 + (uint64_t)(done * ns_per_call);
      while (now_ns(CLOCK_MONOTONIC) < due) {
      }
      uint64_t burst = w->calls - done < BURST ? w->calls - done : BURST;
      acc += call_range(w->variant, done, burst);
      done += burst;
    }
  }
  w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  w->wall_ns = now_ns(CLOCK_MONOTONIC) - wall0;
  w->sink = acc;
  return NULL;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: hot_target [-f nop5|push|endbr] [-n CALLS] [-t THREADS] [-r CALLS_PER_SEC]\n"
          "                  [--no-wait] [--list]\n"
          "  -f  which function (default nop5)      -n  calls per thread (default 1000000)\n"
          "  -t  threads (default 1)                -r  rate limit per thread (default none)\n"
          "  --no-wait  start at once instead of waiting for a line on stdin\n"
          "  --list     print each variant's symbol, file offset, binary and first bytes\n"
          "Prints per thread: thread=I calls=N wall_ns_per_call=X cpu_ns_per_call=Y\n");
}

static int list_variants(void) {
  for (size_t i = 0; i < NUM_VARIANTS; i++) {
    const struct variant* v = &kVariants[i];
    uint64_t offset = 0;
    char path[4096] = "";
    if (!file_offset_of(v->code, &offset, path, sizeof(path))) {
      fprintf(stderr, "hot_target: cannot find %s in /proc/self/maps\n", v->name);
      return 1;
    }
    printf("%s hot_%s 0x%" PRIx64 " %s %s\n", v->name, v->name, offset, path,
           starts_as_expected(v) ? "ok" : "UNEXPECTED-FIRST-BYTES");
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* name = "nop5";
  uint64_t calls = 1000000;
  long threads = 1;
  double rate = 0;
  bool wait_for_go = true;
  enum { OPT_NO_WAIT = 256, OPT_LIST };
  static const struct option long_options[] = {{"no-wait", no_argument, NULL, OPT_NO_WAIT},
                                               {"list", no_argument, NULL, OPT_LIST},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "f:n:t:r:h", long_options, NULL)) != -1) {
    switch (opt) {
      case 'f':
        name = optarg;
        break;
      case 'n':
        calls = strtoull(optarg, NULL, 10);
        break;
      case 't':
        threads = strtol(optarg, NULL, 10);
        break;
      case 'r':
        rate = strtod(optarg, NULL);
        break;
      case OPT_NO_WAIT:
        wait_for_go = false;
        break;
      case OPT_LIST:
        return list_variants();
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  const struct variant* v = find_variant(name);
  if (!v || calls == 0 || threads < 1 || threads > 64) {
    usage(stderr);
    return 2;
  }
  if (!starts_as_expected(v)) {
    fprintf(stderr, "hot_target: hot_%s does not start with the expected bytes\n", v->name);
    return 1;
  }

  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  struct worker* workers = calloc((size_t)threads, sizeof(*workers));
  if (!workers) return 1;
  for (long i = 0; i < threads; i++) {
    workers[i] =
        (struct worker){.variant = v->id, .calls = calls, .calls_per_sec = rate, .start = &start};
    int err = pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]);
    if (err) {
      fprintf(stderr, "hot_target: pthread_create: %s\n", strerror(err));
      return 1;
    }
  }

  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  if (wait_for_go) {
    char line[64];
    if (!fgets(line, sizeof(line), stdin)) return 1;
  }
  pthread_barrier_wait(&start);
  double wall_sum = 0, cpu_sum = 0;
  for (long i = 0; i < threads; i++) {
    pthread_join(workers[i].thread, NULL);
    double wall = (double)workers[i].wall_ns / (double)calls;
    double cpu = (double)workers[i].cpu_ns / (double)calls;
    wall_sum += wall;
    cpu_sum += cpu;
    printf("thread=%ld calls=%" PRIu64 " wall_ns_per_call=%.1f cpu_ns_per_call=%.1f\n", i, calls,
           wall, cpu);
  }
  printf("function=hot_%s threads=%ld calls=%" PRIu64
         " wall_ns_per_call=%.1f cpu_ns_per_call=%.1f\n",
         v->name, threads, calls * (uint64_t)threads, wall_sum / (double)threads,
         cpu_sum / (double)threads);
  free(workers);
  return 0;
}
