// Test helper: chains of non-inlined functions (stack_capture.c, built with
// -O2 -fomit-frame-pointer like Debian's binaries) whose innermost one saves
// the registers an exit probe would and copies its own stack, so that the
// resolver's tests unwind a real stack of this process.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct captured_stack {
  // The layout of fl_user_regs.
  uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
  uint8_t* buffer;     // receives `length` bytes of the stack, from sp up
  size_t length;       // in: the buffer's size; out: bytes copied
  uint64_t stack_top;  // the copy stops there: the end of the thread's stack
};

// capture_outer -> capture_middle -> capture_inner; capture_inner saves the
// registers in its body (ip inside it). capture_middle zeroes rbp and rbx
// (saved by its prologue) and capture_outer keeps its frame with rbp (it
// uses alloca), so only CFI that restores rbp from middle's frame unwinds
// past outer. Returns a value that uses every call's result (no tail calls).
int capture_outer(struct captured_stack* capture, int alloca_bytes);
int capture_middle(struct captured_stack* capture);
int capture_inner(struct captured_stack* capture);

// at_ret_outer -> at_ret_middle -> at_ret_inner -> capture_at_ret: the last,
// in assembly, saves the registers standing on its own `ret` (ip there, the
// return address at [sp]), as an exit probe on a `ret` sees them.
int at_ret_outer(struct captured_stack* capture);
int at_ret_middle(struct captured_stack* capture);
int at_ret_inner(struct captured_stack* capture);
void capture_at_ret(struct captured_stack* capture);
// The address of capture_at_ret's `ret` instruction.
extern const char capture_at_ret_ret[];

#ifdef __cplusplus
}
#endif
