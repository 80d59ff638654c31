// SPDX-License-Identifier: GPL-2.0
/* The floor: an entry and a return program that do nothing. What a probed
 * call costs with these attached is what the kernel's uprobe machinery
 * costs; anything a tracer adds on top is its own. floor_ret_insn is the
 * empty program for the other way to end a call, a plain uprobe on each
 * `ret` instruction (what funclatency does in Go code). clock_entry
 * and clock_return read the clock and nothing else (`floor_loader
 * --clock`): the floor plus the two clock reads every timed call needs,
 * which on a VM's kvm-clock are not cheap. */
/* vmlinux.h must come first: the BPF headers use its types. */
// clang-format off
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
// clang-format on

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int floor_entry(void* ctx) {
  return 0;
}

SEC("uretprobe")
int floor_return(void* ctx) {
  return 0;
}

SEC("uprobe")
int floor_ret_insn(void* ctx) {
  return 0;
}

/* Written so the clock reads are not optimized away. */
__u64 floor_clock_ns = 0;

SEC("uprobe")
int clock_entry(void* ctx) {
  floor_clock_ns = bpf_ktime_get_ns();
  return 0;
}

SEC("uretprobe")
int clock_return(void* ctx) {
  floor_clock_ns = bpf_ktime_get_ns();
  return 0;
}
