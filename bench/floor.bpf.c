// SPDX-License-Identifier: GPL-2.0
/* The floor: an entry and a return program that do nothing. What a probed
 * call costs with these attached is what the kernel's uprobe machinery
 * costs; anything a tracer adds on top is its own. floor_ret_insn is the
 * empty program for the other way to end a call, a plain uprobe on each
 * `ret` instruction (what funclatency does in Go code). */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int floor_entry(void *ctx) {
  return 0;
}

SEC("uretprobe")
int floor_return(void *ctx) {
  return 0;
}

SEC("uprobe")
int floor_ret_insn(void *ctx) {
  return 0;
}
