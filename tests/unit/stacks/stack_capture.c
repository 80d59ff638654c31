// Real stacks for the stack resolver's tests (see stack_capture.h). Built
// with -O2 -fomit-frame-pointer -fno-optimize-sibling-calls (CMakeLists.txt).
#include "stack_capture.h"

// Saves ip (the next instruction's address), sp, bp, bx, r12-r15 into
// *capture and copies up to capture->length bytes from sp (fewer where the
// stack ends) into capture->buffer, without moving sp: the copy is the stack
// as the registers describe it.
__attribute__((noinline)) int capture_inner(struct captured_stack* capture) {
  __asm__ volatile(
      "lea 0(%%rip), %%rax\n\t"
      "mov %%rax, 0(%0)\n\t"
      "mov %%rsp, 8(%0)\n\t"
      "mov %%rbp, 16(%0)\n\t"
      "mov %%rbx, 24(%0)\n\t"
      "mov %%r12, 32(%0)\n\t"
      "mov %%r13, 40(%0)\n\t"
      "mov %%r14, 48(%0)\n\t"
      "mov %%r15, 56(%0)\n\t"
      "mov 80(%0), %%rcx\n\t"
      "sub %%rsp, %%rcx\n\t"
      "cmp 72(%0), %%rcx\n\t"
      "cmovae 72(%0), %%rcx\n\t"
      "mov %%rcx, 72(%0)\n\t"
      "mov 64(%0), %%rdi\n\t"
      "mov %%rsp, %%rsi\n\t"
      "rep movsb\n\t"
      :
      : "r"(capture)
      : "rax", "rcx", "rsi", "rdi", "cc", "memory");
  return capture->length > 0 ? 1 : 0;
}

__attribute__((noinline)) int capture_middle(struct captured_stack* capture) {
  // Neither a frame pointer nor rbx survives into capture_inner.
  __asm__ volatile("xor %%ebp, %%ebp\n\txor %%ebx, %%ebx" ::: "rbp", "rbx");
  const int result = capture_inner(capture);
  __asm__ volatile("" ::: "memory");
  return result + 1;
}

__attribute__((noinline)) int capture_outer(struct captured_stack* capture, int alloca_bytes) {
  volatile char* scratch = __builtin_alloca(alloca_bytes);
  scratch[0] = 1;
  const int result = capture_middle(capture);
  __asm__ volatile("" ::: "memory");
  return result + scratch[0];
}

// void capture_at_ret(struct captured_stack* capture /* rdi */)
__asm__(
    ".text\n"
    ".globl capture_at_ret\n"
    ".globl capture_at_ret_ret\n"
    ".type capture_at_ret, @function\n"
    "capture_at_ret:\n"
    ".cfi_startproc\n"
    "  lea capture_at_ret_ret(%rip), %rax\n"
    "  mov %rax, 0(%rdi)\n"
    "  mov %rsp, 8(%rdi)\n"
    "  mov %rbp, 16(%rdi)\n"
    "  mov %rbx, 24(%rdi)\n"
    "  mov %r12, 32(%rdi)\n"
    "  mov %r13, 40(%rdi)\n"
    "  mov %r14, 48(%rdi)\n"
    "  mov %r15, 56(%rdi)\n"
    "  mov 80(%rdi), %rcx\n"
    "  sub %rsp, %rcx\n"
    "  cmp 72(%rdi), %rcx\n"
    "  cmovae 72(%rdi), %rcx\n"
    "  mov %rcx, 72(%rdi)\n"
    "  mov 64(%rdi), %rdi\n"
    "  mov %rsp, %rsi\n"
    "  rep movsb\n"
    "capture_at_ret_ret:\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size capture_at_ret, .-capture_at_ret\n");

__attribute__((noinline)) int at_ret_inner(struct captured_stack* capture) {
  capture_at_ret(capture);
  __asm__ volatile("" ::: "memory");
  return capture->length > 0 ? 1 : 0;
}

__attribute__((noinline)) int at_ret_middle(struct captured_stack* capture) {
  const int result = at_ret_inner(capture);
  __asm__ volatile("" ::: "memory");
  return result + 1;
}

__attribute__((noinline)) int at_ret_outer(struct captured_stack* capture) {
  const int result = at_ret_middle(capture);
  __asm__ volatile("" ::: "memory");
  return result + 1;
}
