// A program whose symbols the symbol tests resolve. With --wait it prints
// where its functions are in memory (the ground truth for file offsets) and
// waits to be killed, so tests can resolve ":FUNCTION" through its PID.
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) int slow_op(int x) {
  for (int i = 0; i < x; ++i) sink += i;
  return sink;
}

__attribute__((noinline)) int fast_op(int x) {
  return sink += x;
}

// Two more names for fast_op's code: one local-looking, one global.
int __fast_op_impl(int x) __attribute__((alias("fast_op")));
int fast_op_alias(int x) __attribute__((alias("fast_op")));

static __attribute__((noinline)) int local_helper(int x) {
  return sink ^= x;
}

// A family for patterns: symfix_family_0 ... symfix_family_9.
#define FAMILY(n)                                          \
  __attribute__((noinline)) int symfix_family_##n(int x) { \
    return sink += x * n;                                  \
  }
FAMILY(0)
FAMILY(1)
FAMILY(2)
FAMILY(3)
FAMILY(4)
FAMILY(5)
FAMILY(6)
FAMILY(7)
FAMILY(8)
FAMILY(9)

// Function symbols that cannot be probed: one without a size, one in data.
__asm__(
    ".pushsection .text\n"
    ".globl zero_size_function\n"
    ".type zero_size_function, @function\n"
    "zero_size_function:\n"
    "  ret\n"
    ".popsection\n"
    ".pushsection .data\n"
    ".globl function_in_data\n"
    ".type function_in_data, @function\n"
    "function_in_data:\n"
    "  .byte 0xc3\n"
    ".size function_in_data, 1\n"
    ".popsection\n");

int main(int argc, char** argv) {
  int total = slow_op(3) + fast_op(1) + local_helper(2);
  total += symfix_family_0(1) + symfix_family_1(1) + symfix_family_2(1) + symfix_family_3(1) +
           symfix_family_4(1) + symfix_family_5(1) + symfix_family_6(1) + symfix_family_7(1) +
           symfix_family_8(1) + symfix_family_9(1);
  if (argc > 1 && strcmp(argv[1], "--wait") == 0) {
    printf("slow_op=%p\nfast_op=%p\nready\n", (void*)slow_op, (void*)fast_op);
    fflush(stdout);
    for (;;) pause();
  }
  return total == 0;
}
