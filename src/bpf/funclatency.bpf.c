// SPDX-License-Identifier: GPL-2.0
/* One pair of programs serves every traced function: the attach cookie is
 * the function id. Each thread keeps a shadow stack of calls in flight in
 * task local storage (freed by the kernel when the thread exits), so
 * recursion, nesting, longjmp and exceptions never pair an entry with the
 * wrong return. */
/* pt_regs is stable on x86-64: without CO-RE relocations libbpf need not
 * parse the kernel's 5 MB BTF at every start (~70 ms and ~11 MB here). */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "funclatency.h"

char LICENSE[] SEC("license") = "GPL";

/* Fixed before load. */
const volatile __u64 unit_ns = 1000;
const volatile __u32 filter_tgid = 0; /* 0: every process */

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct fl_shadow_stack);
} shadow_stacks SEC(".maps");

/* max_entries of the per-function maps is set to the number of traced
 * functions before load. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fl_fn_stats);
} fn_stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fl_fn_lost);
} fn_lost SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fl_fn_config);
} fn_config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 << 20);
} events SEC(".maps");

/* Wake the reader early once the ring is this full; otherwise it polls. */
#define FL_WAKEUP_THRESHOLD (512 << 10)

static __always_inline bool filtered_out(void) {
  return filter_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != filter_tgid;
}

enum lost_reason { LOST_UNRETURNED, LOST_DEPTH, LOST_RINGBUF };

static __always_inline void count_lost(__u32 fn_id, enum lost_reason reason) {
  struct fl_fn_lost *lost = bpf_map_lookup_elem(&fn_lost, &fn_id);
  if (!lost) return;
  if (reason == LOST_UNRETURNED)
    __sync_fetch_and_add(&lost->unreturned, 1);
  else if (reason == LOST_DEPTH)
    __sync_fetch_and_add(&lost->depth, 1);
  else
    __sync_fetch_and_add(&lost->ringbuf, 1);
}

/* Drops frames deeper than `sp` (their functions were left without a return
 * probe firing) and counts each as lost. Returns the new depth. */
static __always_inline __u32 unwind_below(struct fl_shadow_stack *stack, __u32 depth, __u64 sp) {
  for (int i = 0; i < FL_MAX_DEPTH; i++) {
    if (depth == 0 || depth > FL_MAX_DEPTH) break;
    struct fl_frame *top = &stack->frames[depth - 1];
    if (top->sp >= sp) break;
    count_lost(top->fn_id, LOST_UNRETURNED);
    depth--;
  }
  return depth;
}

SEC("uprobe")
int BPF_KPROBE(fl_entry) {
  if (filtered_out()) return 0;
  __u32 fn_id = (__u32)bpf_get_attach_cookie(ctx);
  struct fl_shadow_stack *stack = bpf_task_storage_get(&shadow_stacks, bpf_get_current_task_btf(),
                                                       0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!stack) {
    count_lost(fn_id, LOST_DEPTH);
    return 0;
  }
  __u64 sp = PT_REGS_SP(ctx);
  __u32 depth = unwind_below(stack, stack->depth, sp);
  if (depth > FL_MAX_DEPTH) depth = 0; /* cannot happen; bounds the verifier */
  if (depth > 0) {
    struct fl_frame *top = &stack->frames[depth - 1];
    if (top->sp == sp && top->fn_id == fn_id) {
      struct fl_fn_config *config = bpf_map_lookup_elem(&fn_config, &fn_id);
      if (config && (config->flags & FL_FN_JUMPS_TO_ENTRY)) {
        /* The function jumped back to its probed instruction: same call. */
        stack->depth = depth;
        return 0;
      }
      /* A new call where the last one stood: that one was left without
       * reaching an exit probe (an exception, longjmp). */
      count_lost(fn_id, LOST_UNRETURNED);
      depth--;
    }
  }
  if (depth >= FL_MAX_DEPTH) {
    stack->depth = depth;
    count_lost(fn_id, LOST_DEPTH);
    return 0;
  }
  struct fl_frame *frame = &stack->frames[depth];
  frame->sp = sp;
  frame->fn_id = fn_id;
  /* Read the clock last at entry (and first at return) so the probes' own
   * work stays out of the duration as far as it can. */
  frame->start_ns = bpf_ktime_get_ns();
  stack->depth = depth + 1;
  return 0;
}

static __always_inline void update_min(__u64 *slot, __u64 value) {
  for (int i = 0; i < 4; i++) {
    __u64 old = *slot;
    if (old != 0 && old <= value) return;
    if (__sync_val_compare_and_swap(slot, old, value) == old) return;
  }
}

static __always_inline void update_max(__u64 *slot, __u64 value) {
  for (int i = 0; i < 4; i++) {
    __u64 old = *slot;
    if (old >= value) return;
    if (__sync_val_compare_and_swap(slot, old, value) == old) return;
  }
}

static __always_inline void record_in_kernel(__u32 fn_id, __u64 duration_ns) {
  struct fl_fn_stats *stats = bpf_map_lookup_elem(&fn_stats, &fn_id);
  if (!stats) return;
  __u32 bucket = fl_bucket_of(duration_ns / unit_ns);
  if (bucket >= FL_NUM_BUCKETS) bucket = FL_NUM_BUCKETS - 1;
  __sync_fetch_and_add(&stats->buckets[bucket], 1);
  __sync_fetch_and_add(&stats->sum_ns, duration_ns);
  update_min(&stats->min_ns, duration_ns);
  update_max(&stats->max_ns, duration_ns);
  /* Last, so a reader never sees a count without its bucket. */
  __sync_fetch_and_add(&stats->count, 1);
}

static __always_inline void record_as_event(__u32 fn_id, __u64 duration_ns) {
  struct fl_event *event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
  if (!event) {
    count_lost(fn_id, LOST_RINGBUF);
    return;
  }
  event->duration_ns = duration_ns;
  event->fn_id = fn_id;
  event->tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  __u64 pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
  bpf_ringbuf_submit(event, pending > FL_WAKEUP_THRESHOLD ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Pops the frame of the call that entered at `entry_sp` and records its
 * duration. Frames deeper than it never returned and are counted lost. */
static __always_inline int complete_call(struct pt_regs *ctx, __u64 entry_sp, __u64 now) {
  __u32 fn_id = (__u32)bpf_get_attach_cookie(ctx);
  struct fl_shadow_stack *stack =
      bpf_task_storage_get(&shadow_stacks, bpf_get_current_task_btf(), 0, 0);
  if (!stack) return 0;
  __u32 depth = unwind_below(stack, stack->depth, entry_sp);
  if (depth == 0 || depth > FL_MAX_DEPTH) {
    stack->depth = depth > FL_MAX_DEPTH ? 0 : depth;
    return 0;
  }
  struct fl_frame *top = &stack->frames[depth - 1];
  if (top->sp != entry_sp || top->fn_id != fn_id) {
    /* Not ours: this call's entry was not recorded (stack full, or a second
     * return probe chained on the same frame). Nothing to pair. */
    stack->depth = depth;
    return 0;
  }
  __u64 duration_ns = now - top->start_ns;
  stack->depth = depth - 1;

  struct fl_fn_config *config = bpf_map_lookup_elem(&fn_config, &fn_id);
  if (config && config->subtract_ns) {
    duration_ns = duration_ns > config->subtract_ns ? duration_ns - config->subtract_ns : 0;
  }
  if (config && config->mode == FL_MODE_KERNEL)
    record_in_kernel(fn_id, duration_ns);
  else
    record_as_event(fn_id, duration_ns);
  return 0;
}

/* Return probe: runs after `ret`, so the return address was popped. */
SEC("uretprobe")
int BPF_KRETPROBE(fl_return) {
  __u64 now = bpf_ktime_get_ns();
  if (filtered_out()) return 0;
  return complete_call(ctx, PT_REGS_SP(ctx) - 8, now);
}

/* Probe on a `ret` instruction of the function: runs before it, with the
 * return address still at [sp]. Used where a return probe would break C++
 * unwinding (it replaces the return address with a trampoline the unwinder
 * has no frame info for). */
SEC("uprobe")
int BPF_KPROBE(fl_exit) {
  __u64 now = bpf_ktime_get_ns();
  if (filtered_out()) return 0;
  return complete_call(ctx, PT_REGS_SP(ctx), now);
}
