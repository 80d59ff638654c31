// refused-probes: a pattern of functions of which the kernel refuses a few
// probes, for tests/e2e/test_refused_probes.py. The kernel's uprobes cannot
// take an instruction with a LOCK or segment prefix (arch/x86 uprobes:
// is_prefix_bad), and such a refusal fails a whole uprobe_multi link: the
// tool must find the refused points among many, attach the rest, and name
// the functions it left out.
//
// refused_ok_000 ... refused_ok_999: ordinary functions.
// refused_lock_entry: its first instruction is `lock add` (entry refused).
// refused_cs_ret: its entry is ordinary, its `ret` carries a CS prefix (a ret
//   probe, --exit-probes ret, is refused; its entry must not stay probed).
// refused_vex_entry: its first instruction is a VEX-encoded load, which the
//   kernel refuses too. Called only where the CPU has AVX.
// refused_mov_ss: its first instruction loads SS, which the kernel refuses
//   with nothing in the encoding that tells it in advance (the tool finds
//   it by bisecting a link). Never called: it would fault.
//
// Usage: refused-probes [--wait-signal] [--truth FILE] [--calls N]
// Prints "ready pid=N"; with --wait-signal starts on SIGUSR1; calls every
// function N times (default 3), writes {"program", "pid", "functions":
// [{"name", "calls", "returned"}]} to FILE.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef unsigned long (*ok_fn)(unsigned long);

#include "many_functions.h"
#include "program_options.h"

// clang-format off
#define ALL(F)                                                                         \
  HUNDRED(F, refused_ok_0, 0) HUNDRED(F, refused_ok_1, 1) HUNDRED(F, refused_ok_2, 2) \
  HUNDRED(F, refused_ok_3, 3) HUNDRED(F, refused_ok_4, 4) HUNDRED(F, refused_ok_5, 5) \
  HUNDRED(F, refused_ok_6, 6) HUNDRED(F, refused_ok_7, 7) HUNDRED(F, refused_ok_8, 8) \
  HUNDRED(F, refused_ok_9, 9)
// clang-format on

ALL(DEFINE)

static const struct {
  const char* name;
  ok_fn fn;
} kFunctions[] = {ALL(ENTRY)};
enum { kCount = sizeof(kFunctions) / sizeof(kFunctions[0]) };
_Static_assert(kCount == 1000, "1,000 functions");

// Written in assembly: no compiler picks these encodings. The first two add
// 1 to *p; the third loads 32 bytes from p; the fourth is never called.
void refused_lock_entry(unsigned* p);
void refused_cs_ret(unsigned* p);
void refused_vex_entry(const void* p);
void refused_mov_ss(void);
__asm__(
    ".text\n"
    ".globl refused_lock_entry\n"
    ".type refused_lock_entry, @function\n"
    "refused_lock_entry:\n"
    "  lock addl $1, (%rdi)\n"
    "  ret\n"
    ".size refused_lock_entry, .-refused_lock_entry\n"
    ".globl refused_cs_ret\n"
    ".type refused_cs_ret, @function\n"
    "refused_cs_ret:\n"
    "  movl (%rdi), %eax\n"
    "  addl $1, %eax\n"
    "  movl %eax, (%rdi)\n"
    "  .byte 0x2e\n"  // CS prefix on the ret
    "  ret\n"
    ".size refused_cs_ret, .-refused_cs_ret\n"
    ".globl refused_vex_entry\n"
    ".type refused_vex_entry, @function\n"
    "refused_vex_entry:\n"
    "  vmovdqu (%rdi), %ymm0\n"
    "  vzeroupper\n"
    "  ret\n"
    ".size refused_vex_entry, .-refused_vex_entry\n"
    ".globl refused_mov_ss\n"
    ".type refused_mov_ss, @function\n"
    "refused_mov_ss:\n"
    "  mov %eax, %ss\n"
    "  ret\n"
    ".size refused_mov_ss, .-refused_mov_ss\n");

static volatile sig_atomic_t started;
static void on_start(int signo) {
  (void)signo;
  started = 1;
}

int main(int argc, char** argv) {
  int wait_signal = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--wait-signal") == 0) wait_signal = 1;
    if (strcmp(argv[i], "--help") == 0) {
      fprintf(stderr, "usage: %s [--wait-signal] [--truth FILE] [--calls N]\n", argv[0]);
      return 0;
    }
  }
  const char* truth_path = text_option(argc, argv, "--truth");
  const char* calls_text = text_option(argc, argv, "--calls");
  const unsigned long calls = calls_text ? strtoul(calls_text, NULL, 10) : 3;

  signal(SIGUSR1, on_start);
  printf("ready pid=%d\n", getpid());
  fflush(stdout);
  while (wait_signal && !started) pause();

  unsigned long checksum = 0;
  unsigned counter = 0;
  const int avx = __builtin_cpu_supports("avx");
  const unsigned long vex_calls = avx ? calls : 0;
  static const unsigned char block[32] = {1};
  for (unsigned long n = 0; n < calls; n++) {
    for (int i = 0; i < kCount; i++) checksum += kFunctions[i].fn(n);
    refused_lock_entry(&counter);
    refused_cs_ret(&counter);
    if (avx) refused_vex_entry(block);
  }
  printf("checksum %lu counter %u\n", checksum, counter);
  if (truth_path == NULL) return 0;
  FILE* truth = fopen(truth_path, "w");
  if (truth == NULL) return 1;
  fprintf(truth, "{\"program\": \"refused-probes\", \"pid\": %d, \"functions\": [", getpid());
  for (int i = 0; i < kCount; i++) {
    fprintf(truth, "%s{\"name\": \"%s\", \"calls\": %lu, \"returned\": %lu}", i ? ", " : "",
            kFunctions[i].name, calls, calls);
  }
  fprintf(truth, ", {\"name\": \"refused_lock_entry\", \"calls\": %lu, \"returned\": %lu}", calls,
          calls);
  fprintf(truth, ", {\"name\": \"refused_cs_ret\", \"calls\": %lu, \"returned\": %lu}", calls,
          calls);
  fprintf(truth, ", {\"name\": \"refused_vex_entry\", \"calls\": %lu, \"returned\": %lu}",
          vex_calls, vex_calls);
  fprintf(truth, ", {\"name\": \"refused_mov_ss\", \"calls\": 0, \"returned\": 0}]}\n");
  return fclose(truth) == 0 ? 0 : 1;
}
