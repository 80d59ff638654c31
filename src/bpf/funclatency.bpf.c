// SPDX-License-Identifier: GPL-2.0
/* One pair of programs serves every traced function: the attach cookie is
 * the function id. Each thread keeps a shadow stack of calls in flight in
 * task local storage (freed by the kernel when the thread exits), so
 * recursion, nesting, longjmp and exceptions never pair an entry with the
 * wrong return. */
/* pt_regs is stable on x86-64: without CO-RE relocations libbpf need not
 * parse the kernel's 5 MB BTF at every start (~70 ms and ~11 MB here). */
#define BPF_NO_PRESERVE_ACCESS_INDEX
/* vmlinux.h must come first: the BPF headers use its types. */
// clang-format off
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "funclatency.h"
// clang-format on

char LICENSE[] SEC("license") = "GPL";

/* Fixed before load. */
const volatile __u64 unit_ns = 1000;
const volatile __u32 filter_tgid = 0; /* 0: every process */
/* --cpu-split: the number of kernel slots, the stride between a slot's
 * parts in fn_stats (see enum fl_call_part); 0 without the split. */
const volatile __u32 split_stride = 0;
/* --self: where a slot's self part is in fn_stats, slot + self_key_offset
 * (after the split's parts with --cpu-split); 0 without --self. */
const volatile __u32 self_key_offset = 0;
/* --by: FL_BY_* bits; 0 without series. */
const volatile __u32 series_by = 0;
/* --by retval/argN (FL_BY_VALUE): where the call's value comes from (enum
 * fl_value_source), which register (argument N, or a Go result word), and
 * the rule that classifies it (enum fl_value_rule). */
const volatile __u32 value_source = FL_VALUE_NONE;
const volatile __u32 value_index = 0;
const volatile __u32 value_rule = FL_RULE_ZERO;
/* -c/--cgroup: how many entries of cgroup_filter to check; 0 traces all. */
const volatile __u32 cgroup_filters = 0;
/* --slowest/--slower-than: calls over their function's slow_ns send an
 * fl_slow_call with the top of their stack; 0 leaves that code out. */
const volatile __u32 slow_calls_on = 0;
/* --slowest/--slower-than: the interval; user space counts it up at each
 * report. The floors start over, and each call's event and slow record carry
 * the value its probe read, so user space counts both in that interval. */
__u64 slow_gen = 0;

/* The options above that add code to the call path (--cpu-split, --self,
 * --by, --slowest/--slower-than) as a program sees them. Each probe comes in
 * two builds of the same code: the full one reads them from .rodata (the
 * verifier drops the code of those that are off, but goes over every
 * instruction first, and that is milliseconds of every start), the plain one
 * is compiled with all of them off, for runs that use none. */
#define FL_OPTION(plain, option) ((plain) ? 0 : (option))
/* Both builds of a probe: `name` (full) and `name`_plain, each calling
 * body(ctx, plain). */
#define FL_BOTH_BUILDS(section, kind, name, body) \
  SEC(section) int kind(name) {                   \
    return body(ctx, false);                      \
  }                                               \
  SEC(section) int kind(name##_plain) {           \
    return body(ctx, true);                       \
  }

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct fl_shadow_stack);
} shadow_stacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FL_MAX_SPLIT_THREADS); /* 1 without --cpu-split */
  __type(key, __u32);
  __type(value, struct fl_thread_switches);
} thread_switches SEC(".maps");

/* An array indexed by a __u32 number (a function's id, a kernel slot, a
 * span's index): its max_entries, 1 here, is set by user space before load
 * (probe/bpf_object: the functions, the slots times their parts, the spans). */
#define FL_NUMBERED_ARRAY(map_type, value_type) \
  struct {                                      \
    __uint(type, map_type);                     \
    __uint(max_entries, 1);                     \
    __type(key, __u32);                         \
    __type(value, value_type);                  \
  }

/* Kernel-mode totals: an entry per slot and part (the key: record_in_kernel). */
FL_NUMBERED_ARRAY(BPF_MAP_TYPE_PERCPU_ARRAY, struct fl_fn_stats) fn_stats SEC(".maps");
/* By function id. */
FL_NUMBERED_ARRAY(BPF_MAP_TYPE_PERCPU_ARRAY, struct fl_fn_lost) fn_lost SEC(".maps");
FL_NUMBERED_ARRAY(BPF_MAP_TYPE_ARRAY, struct fl_fn_config) fn_config SEC(".maps");

/* --by in kernel mode: totals by series (sized to --max-series, allocated
 * as series appear, taken out by user space once a series ended: its
 * processes gone, no call for --series-expiry), one value shared by every
 * CPU (record_in_kernel adds atomically): a series' memory does not grow
 * with the CPU count. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1);
  __type(key, struct fl_series_key);
  __type(value, struct fl_fn_stats);
} series_stats SEC(".maps");

/* --by in kernel mode: series folded into `other` because series_stats was
 * full, to count them once each (an LRU: a bound, not an exact count past it). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1);
  __type(key, struct fl_series_key);
  __type(value, __u8);
} folded_series SEC(".maps");
__u64 series_folded = 0;

/* -c/--cgroup: the cgroups whose tasks (and their descendants') are traced. */
struct {
  __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
  __uint(max_entries, FL_MAX_CGROUP_FILTERS);
  __type(key, __u32);
  __type(value, __u32);
} cgroup_filter SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 << 20);
} events SEC(".maps");

/* --slowest/--slower-than: slow calls with their stacks (one page when
 * unused). Rare by design: only calls over their function's threshold. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096);
} slow_calls SEC(".maps");

/* --slowest: each function's floor (one entry when unused). */
FL_NUMBERED_ARRAY(BPF_MAP_TYPE_ARRAY, struct fl_slow_floor) slow_floors SEC(".maps");

/* Wake the reader early once the ring is this full; otherwise it polls. */
#define FL_WAKEUP_THRESHOLD (512 << 10)

/* In none of the -c cgroups (decided before any other work). */
static __always_inline bool outside_cgroups(void) {
  for (__u32 i = 0; i < FL_MAX_CGROUP_FILTERS; i++) {
    if (i >= cgroup_filters) break;
    if (bpf_current_task_under_cgroup(&cgroup_filter, i) == 1) return false;
  }
  return true;
}

static __always_inline bool filtered_out(void) {
  if (filter_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != filter_tgid) return true;
  return cgroup_filters && outside_cgroups();
}

/* Adds one to the __u64 counter `offset` bytes into entry `index` of `map`,
 * an array of counter structs (fn_lost, span_lost). Atomic though per CPU: a
 * uprobe's program can be preempted. */
static __always_inline void count_at(void* map, __u32 index, __u32 offset) {
  char* counters = bpf_map_lookup_elem(map, &index);
  if (counters) __sync_fetch_and_add((__u64*)(counters + offset), 1);
}

/* A lost call's reason: the fl_fn_lost counter it adds to. */
enum lost_reason {
  LOST_UNRETURNED = __builtin_offsetof(struct fl_fn_lost, unreturned),
  LOST_DEPTH = __builtin_offsetof(struct fl_fn_lost, depth),
  LOST_RINGBUF = __builtin_offsetof(struct fl_fn_lost, ringbuf),
  SPLIT_UNKNOWN = __builtin_offsetof(struct fl_fn_lost, split_unknown),
  SLOW_DROPPED = __builtin_offsetof(struct fl_fn_lost, slow_dropped),
};

static __always_inline void count_lost(__u32 fn_id, enum lost_reason reason) {
  count_at(&fn_lost, fn_id, reason);
}

/* The helpers below work on a shadow stack's frames, a thread's or (Go
 * code) a goroutine's, each bounded by its own depth (a power of two). */

/* The frame at depth `depth` (1 = the bottom), or NULL outside 1..max_depth.
 * The mask keeps the index provably in bounds for the verifier, whatever
 * the compiler makes of the comparison before it. */
static __always_inline struct fl_frame* frame_at(struct fl_frame* frames, __u32 max_depth,
                                                 __u32 depth) {
  __u32 index = depth - 1;
  if (index >= max_depth) return NULL;
  asm volatile("" : "+r"(index));
  return &frames[index & (max_depth - 1)];
}

/* --cpu-split: the switched-out totals noted for the frame at `depth`. */
static __always_inline struct fl_switch_marks* marks_at(struct fl_shadow_stack* stack,
                                                        __u32 depth) {
  __u32 index = depth - 1;
  if (index >= FL_MAX_DEPTH) return NULL;
  asm volatile("" : "+r"(index));
  return &stack->marks[index & (FL_MAX_DEPTH - 1)];
}

/* Drops frames deeper than `sp` (their functions were left without an exit
 * probe firing) and counts each as lost. Returns the new depth. */
struct unwind_ctx {
  struct fl_frame* frames;
  __u32 depth;
  __u64 sp;
};

/* One frame of an unwind; 1 stops the loop. The stack's size is a constant
 * here (one step per kind of stack) so the verifier can bound the index. */
static __always_inline int unwind_step(struct unwind_ctx* ctx, __u32 max_depth) {
  struct fl_frame* top = frame_at(ctx->frames, max_depth, ctx->depth);
  if (!top || top->sp >= ctx->sp) return 1;
  count_lost(top->fn_id, LOST_UNRETURNED);
  ctx->depth--;
  return 0;
}

static int unwind_thread_step(__u32 index, void* data) {
  return unwind_step(data, FL_MAX_DEPTH);
}

static int unwind_goroutine_step(__u32 index, void* data) {
  return unwind_step(data, FL_GO_MAX_DEPTH);
}

/* bpf_loop: the verifier checks a step once instead of every unrolled
 * iteration, which keeps the load (and so the start) short. */
static __always_inline __u32 unwind_below(struct fl_frame* frames, __u32 max_depth, __u32 depth,
                                          __u64 sp) {
  /* The common case, nothing deeper to drop, costs no helper call. */
  struct fl_frame* top = frame_at(frames, max_depth, depth);
  if (!top || top->sp >= sp) return depth;
  struct unwind_ctx ctx = {.frames = frames, .depth = depth, .sp = sp};
  if (max_depth == FL_GO_MAX_DEPTH)
    bpf_loop(FL_GO_MAX_DEPTH, unwind_goroutine_step, &ctx, 0);
  else
    bpf_loop(FL_MAX_DEPTH, unwind_thread_step, &ctx, 0);
  return ctx.depth;
}

static __always_inline bool jumps_to_entry(__u32 fn_id) {
  struct fl_fn_config* config = bpf_map_lookup_elem(&fn_config, &fn_id);
  return config && (config->flags & FL_FN_JUMPS_TO_ENTRY);
}

/* Records a call entering at `sp`. An entry where the top frame of the same
 * function stands is that call jumping back to its probed instruction, not a
 * new call, when the function is flagged FL_FN_JUMPS_TO_ENTRY (a self tail
 * call compiled as a loop). Returns the new depth; `pushed` says whether a
 * new frame is on top. */
static __always_inline __u32 push_call(struct fl_frame* frames, __u32 max_depth, __u32 depth,
                                       __u32 fn_id, __u64 sp, __u64 arg, bool* pushed) {
  *pushed = false;
  depth = unwind_below(frames, max_depth, depth, sp);
  if (depth > max_depth) depth = 0; /* cannot happen */
  struct fl_frame* top = frame_at(frames, max_depth, depth);
  if (top) {
    if (top->sp == sp && top->fn_id == fn_id) {
      if (jumps_to_entry(fn_id)) return depth;
      /* A new call where the last one stood: that one was left without
       * reaching an exit probe (an exception, longjmp). */
      count_lost(fn_id, LOST_UNRETURNED);
      depth--;
    }
  }
  struct fl_frame* frame = frame_at(frames, max_depth, depth + 1);
  if (!frame) {
    count_lost(fn_id, LOST_DEPTH);
    return depth;
  }
  frame->sp = sp;
  frame->fn_id = fn_id;
  frame->arg = arg;
  frame->child_ns = 0;
  /* Read the clock last at entry (and first at return) so the probes' own
   * work stays out of the duration as far as it can. */
  frame->start_ns = bpf_ktime_get_ns();
  *pushed = true;
  return depth + 1;
}

/* Every time the kernel switched the current task out, by its own count. */
static __always_inline __u64 kernel_switches(void) {
  struct task_struct* task = bpf_get_current_task_btf();
  return task->nvcsw + task->nivcsw;
}

/* --cpu-split: the kernel's count of the thread's switches, read before the
 * clock at entry and at exit. The thread can be switched out between a clock
 * read and our own counts (a uprobe's program is preemptible): outside the
 * call by our counts and inside it by the clock, that time would count as
 * on-CPU (at entry), or inside it by our counts and outside it by the clock,
 * as off-CPU time past the call's end (at exit). Read before the clock, the
 * kernel's count misses such a switch and ours has it: the two differ, and
 * the call's split is unknown rather than wrong. */
static __always_inline __u64 switches_before_clock(bool plain) {
  return FL_OPTION(plain, split_stride) ? kernel_switches() : 0;
}

/* --cpu-split: settles a thread that is on a CPU while its entry says it
 * left and never came back. Not every context switch reaches the
 * sched_switch tracepoint: on the kernel of the machines this was measured
 * on, no switch away from some system threads does (ftrace's sched_switch
 * event misses them too), so a thread one of them hands the CPU back to is
 * seen leaving and not returning, and its next switch-out would start its
 * time out over, the wait before counted as on-CPU. The scheduler's own
 * account says what happened: one arrival on a CPU since it left, and the
 * run_delay added by it, the wait for the CPU. A thread that left runnable
 * waited all of it; one that left sleeping, or whose arrivals do not add up,
 * has its time out unknown, and so have the calls in flight (untimed_outs).
 * Called on the thread's own CPU, from a uprobe too, which can be preempted
 * (and the thread switched out) at any point: the time out is taken with an
 * exchange, and a switch-out in between (outs moved) makes it unknown. */
static __always_inline void settle_unseen_return(struct fl_thread_switches* thread,
                                                 struct task_struct* task) {
  __u64 outs = *(volatile __u64*)&thread->outs;
  if (!__sync_lock_test_and_set(&thread->out_since_ns, 0)) return;
  __u64 arrivals = task->sched_info.pcount - thread->out_arrivals;
  __u64 waited_ns = task->sched_info.run_delay - thread->out_run_delay_ns;
  __u32 runnable = thread->out_runnable;
  asm volatile("" ::: "memory");
  if (runnable && arrivals == 1 && *(volatile __u64*)&thread->outs == outs)
    __sync_fetch_and_add(&thread->runnable_ns, waited_ns);
  else if (thread->untimed_outs < outs)
    thread->untimed_outs = outs;
}

/* --cpu-split: notes the thread's switched-out totals as the call at
 * `depth` starts, and that a call is in flight; `kernel_before` is
 * switches_before_clock() read before the entry's clock. */
static __always_inline void mark_switches(struct fl_shadow_stack* stack, __u32 depth,
                                          __u64 kernel_before) {
  struct fl_switch_marks* marks = marks_at(stack, depth);
  if (!marks) return;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct fl_thread_switches* thread = bpf_map_lookup_elem(&thread_switches, &tid);
  if (!thread) {
    struct fl_thread_switches fresh = {};
    bpf_map_update_elem(&thread_switches, &tid, &fresh, BPF_NOEXIST);
    thread = bpf_map_lookup_elem(&thread_switches, &tid);
    if (!thread) return;
  }
  settle_unseen_return(thread, bpf_get_current_task_btf()); /* running now */
  thread->in_call = depth;
  marks->runnable_ns = thread->runnable_ns;
  marks->blocked_ns = thread->blocked_ns;
  marks->outs = thread->outs;
  marks->kernel_switches = kernel_before;
}

/* A register of the probed context. The verifier takes only constant
 * offsets into ctx, so every candidate is loaded (volatile: the compiler may
 * not fold the loads of a switch into one at a computed offset) and the
 * value picked from them. */
#define FL_REG(field) (*(volatile __u64*)&ctx->field)

/* --by argN: argument N of a C call at its entry (x86-64 System V: RDI,
 * RSI, RDX, RCX, R8, R9); value_index is fixed before load. */
static __always_inline __u64 c_argument(struct pt_regs* ctx, bool plain) {
  if (FL_OPTION(plain, value_source) != FL_VALUE_ARG) return 0;
  __u64 regs[6] = {FL_REG(di), FL_REG(si), FL_REG(dx), FL_REG(cx), FL_REG(r8), FL_REG(r9)};
  __u32 index = value_index;
  return index < 6 ? regs[index] : 0;
}

/* Go's internal register ABI (amd64): the integer words of the arguments at
 * entry, and of the results at a `ret`, in RAX, RBX, RCX, RDI, RSI, R8, R9,
 * R10, R11. */
static __always_inline __u64 go_word(struct pt_regs* ctx, __u32 word) {
  __u64 regs[9] = {FL_REG(ax), FL_REG(bx), FL_REG(cx),  FL_REG(di), FL_REG(si),
                   FL_REG(r8), FL_REG(r9), FL_REG(r10), FL_REG(r11)};
  return word < 9 ? regs[word] : 0;
}

static __always_inline int enter_call(struct pt_regs* ctx, bool plain) {
  if (filtered_out()) return 0;
  __u32 fn_id = (__u32)bpf_get_attach_cookie(ctx);
  struct fl_shadow_stack* stack = bpf_task_storage_get(&shadow_stacks, bpf_get_current_task_btf(),
                                                       0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!stack) {
    count_lost(fn_id, LOST_DEPTH);
    return 0;
  }
  bool pushed;
  const __u64 switches = switches_before_clock(plain);
  __u32 depth = push_call(stack->frames, FL_MAX_DEPTH, stack->depth, fn_id, PT_REGS_SP(ctx),
                          c_argument(ctx, plain), &pushed);
  stack->depth = depth;
  if (FL_OPTION(plain, split_stride) && pushed) mark_switches(stack, depth, switches);
  return 0;
}

FL_BOTH_BUILDS("uprobe", BPF_KPROBE, fl_entry, enter_call)

/* The slot's minimum (0: unset) or maximum, raised or lowered to `value`
 * unless another CPU got there first. The retries are a loop, not four
 * copies (see record_parts_in_kernel). */
static __always_inline void update_bound(__u64* slot, __u64 value, bool minimum) {
#pragma clang loop unroll(disable)
  for (int i = 0; i < 4; i++) {
    __u64 old = *slot;
    if (minimum ? old != 0 && old <= value : old >= value) return;
    if (__sync_val_compare_and_swap(slot, old, value) == old) return;
  }
}

/* What a series' totals start as. */
const struct fl_fn_stats empty_stats = {};

static __always_inline struct fl_fn_stats* series_totals(__u32 fn_id, __u32 part, __u32 by,
                                                         __u64 value);

/* Adds a call (or one part of it) to the function's kernel slot: fn_stats
 * entry `slot`, or with --cpu-split slot + part * split_stride. With --by,
 * the caller's series gets it instead, or the slot (series `other`) when
 * there is no room for the series. */
static __always_inline void record_in_kernel(__u32 fn_id, __u32 slot, __u32 part, __u64 duration_ns,
                                             __u32 by, __u64 value, bool plain) {
  struct fl_fn_stats* stats = NULL;
  if (by) stats = series_totals(fn_id, part, by, value);
  if (!stats) {
    __u32 key = part == FL_PART_SELF ? slot + FL_OPTION(plain, self_key_offset)
                                     : slot + part * FL_OPTION(plain, split_stride);
    stats = bpf_map_lookup_elem(&fn_stats, &key);
  }
  if (!stats) return;
  __u32 bucket = fl_bucket_of(fl_in_units(duration_ns, unit_ns));
  if (bucket >= FL_NUM_BUCKETS) bucket = FL_NUM_BUCKETS - 1;
  __sync_fetch_and_add(&stats->buckets[bucket], 1);
  __sync_fetch_and_add(&stats->sum_ns, duration_ns);
  /* 0 means unset: a duration of 0 (a --cpu-split part) is kept as 1 ns. */
  update_bound(&stats->min_ns, duration_ns ? duration_ns : 1, true);
  update_bound(&stats->max_ns, duration_ns, false);
  /* Last, so a reader never sees a count without its bucket. */
  __sync_fetch_and_add(&stats->count, 1);
}

static __always_inline void submit_event(void* event) {
  __u64 pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
  bpf_ringbuf_submit(event, pending > FL_WAKEUP_THRESHOLD ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* `tagged_fn`: the function id with FL_EVENT_ODD_GEN when it applies. */
static __always_inline void record_as_event(__u32 tagged_fn, __u64 duration_ns) {
  struct fl_event* event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
  if (!event) {
    count_lost(tagged_fn & ~FL_EVENT_ODD_GEN, LOST_RINGBUF);
    return;
  }
  event->duration_ns = duration_ns;
  event->fn_id = tagged_fn;
  event->tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  submit_event(event);
}

/* Where a call's time went, for --cpu-split. */
struct call_split {
  __u64 runnable_ns;
  __u64 blocked_ns;
};

/* The record with the split (when known), the self time (with --self) and
 * the caller's identity. */
static __always_inline void record_ext_event(__u32 tagged_fn, __u64 duration_ns,
                                             const struct call_split* split, __u32 by, __u64 value,
                                             __u64 self_ns) {
  struct fl_event_ext* event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
  if (!event) {
    count_lost(tagged_fn & ~FL_EVENT_ODD_GEN, LOST_RINGBUF);
    return;
  }
  event->call.duration_ns = duration_ns;
  event->call.fn_id = tagged_fn;
  event->call.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  event->flags = (split ? FL_EVENT_SPLIT : 0) | (self_key_offset ? FL_EVENT_SELF : 0);
  event->self_ns = self_ns;
  event->runnable_ns = split ? split->runnable_ns : 0;
  event->blocked_ns = split ? split->blocked_ns : 0;
  event->cgroup_id = (by & FL_BY_CGROUP) ? bpf_get_current_cgroup_id() : 0;
  if (by & (FL_BY_COMM | FL_BY_PID))
    bpf_get_current_comm(event->comm, sizeof(event->comm));
  else
    __builtin_memset(event->comm, 0, sizeof(event->comm));
  event->reserved = 0;
  event->value = (by & FL_BY_VALUE) ? value : 0;
  submit_event(event);
}

/* --by in kernel mode: the totals of the caller's series for `part`, or NULL
 * when the map has no room (the call then goes to `other`: fn_stats). */
static __always_inline struct fl_fn_stats* series_totals(__u32 fn_id, __u32 part, __u32 by,
                                                         __u64 value) {
  struct fl_series_key key = {};
  key.fn_id = fn_id;
  key.part = part;
  if (by & FL_BY_VALUE) key.value = value;
  if (by & FL_BY_PID) key.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (by & FL_BY_CGROUP) key.cgroup_id = bpf_get_current_cgroup_id();
  /* A process series carries its command too (an exec makes a new one). */
  if (by & (FL_BY_COMM | FL_BY_PID)) bpf_get_current_comm(key.comm, sizeof(key.comm));
  struct fl_fn_stats* stats = bpf_map_lookup_elem(&series_stats, &key);
  if (stats) return stats;
  bpf_map_update_elem(&series_stats, &key, &empty_stats, BPF_NOEXIST);
  stats = bpf_map_lookup_elem(&series_stats, &key);
  if (stats) return stats;
  /* Full: count the series once (bounded), then fold its calls into other. */
  __u8 seen = 1;
  if (part == FL_PART_WALL && bpf_map_update_elem(&folded_series, &key, &seen, BPF_NOEXIST) == 0)
    __sync_fetch_and_add(&series_folded, 1);
  return NULL;
}

/* Kernel mode: the call in its slot, part by part: the wall time, with
 * --cpu-split its three parts (on-CPU is what the call was not switched out;
 * the probes' own cost, taken off the wall time, is on-CPU time too), with
 * --self the self time. One loop, not a copy of record_in_kernel per part:
 * the verifier goes over every instruction of a program at each start,
 * whatever the options (each copy is ~0.3 ms of it). */
static __always_inline void record_parts_in_kernel(__u32 fn_id, __u32 slot, __u64 duration_ns,
                                                   const struct call_split* split, __u64 self_ns,
                                                   __u32 by, __u64 value, bool plain) {
  __u64 part_ns[FL_CALL_PARTS + 1] = {duration_ns, 0, 0, 0, self_ns};
  if (split) {
    __u64 off_cpu = split->runnable_ns + split->blocked_ns;
    part_ns[FL_PART_ONCPU] = duration_ns > off_cpu ? duration_ns - off_cpu : 0;
    part_ns[FL_PART_RUNNABLE] = split->runnable_ns;
    part_ns[FL_PART_BLOCKED] = split->blocked_ns;
  }
#pragma clang loop unroll(disable)
  for (__u32 part = FL_PART_WALL; part <= FL_PART_SELF; part++) {
    if (part == FL_PART_SELF && !FL_OPTION(plain, self_key_offset)) break;
    if (part != FL_PART_WALL && part != FL_PART_SELF && !split) continue;
    record_in_kernel(fn_id, slot, part, part_ns[part], by, value, plain);
  }
}

/* Pops the frame of the call that entered at `entry_sp` into `duration_ns`
 * (and, with --self, the time its traced calls took into `child_ns`).
 * False when the stack holds no such call: its entry was not recorded (stack
 * full, or a second return probe chained on the same frame). Frames deeper
 * than it never returned and are counted lost; their time is not known, so
 * it is not taken off anyone's self time. */
static __always_inline bool pop_call(struct fl_frame* frames, __u32 max_depth, __u32* depth_slot,
                                     __u32 fn_id, __u64 entry_sp, __u64 now, __u64* duration_ns,
                                     __u64* arg, __u64* child_ns, bool plain) {
  __u32 depth = unwind_below(frames, max_depth, *depth_slot, entry_sp);
  struct fl_frame* top = frame_at(frames, max_depth, depth);
  if (!top) {
    *depth_slot = depth > max_depth ? 0 : depth;
    return false;
  }
  if (top->sp != entry_sp || top->fn_id != fn_id) {
    *depth_slot = depth;
    return false;
  }
  *depth_slot = depth - 1;
  *duration_ns = now - top->start_ns;
  *arg = top->arg;
  *child_ns = top->child_ns;
  /* --self: the caller's frame (the traced call this one was made in, on
   * the same thread or goroutine) takes the raw duration off its own: the
   * call as recorded plus the probes' cost inside it (subtract_ns), both
   * time the caller did not spend itself. The probes' work outside the two
   * clock reads stays in the caller's self time, as it stays in its wall. */
  if (FL_OPTION(plain, self_key_offset)) {
    struct fl_frame* caller = frame_at(frames, max_depth, depth - 1);
    if (caller) caller->child_ns += *duration_ns;
  }
  return true;
}

/* Copies the user stack from `sp` up into `stack`: all of the window at
 * once, or where the stack's mapping ends inside it, page by page up to
 * that end. Returns the bytes copied. */
static __always_inline __u32 copy_user_stack(__u8* stack, __u64 sp) {
  if (bpf_probe_read_user(stack, FL_STACK_BYTES, (const void*)sp) == 0) return FL_STACK_BYTES;
  __u32 first = 4096 - (__u32)(sp & 4095);
  if (first > 4096 || first == 0) return 0;
  if (bpf_probe_read_user(stack, first, (const void*)sp)) return 0;
  __u32 copied = first;
  for (__u32 page = 0; page < FL_STACK_BYTES / 4096 - 1; page++) {
    __u32 offset = first + page * 4096;
    if (offset > FL_STACK_BYTES - 4096) break;
    if (bpf_probe_read_user(stack + offset, 4096, (const void*)(sp + offset))) break;
    copied = offset + 4096;
  }
  return copied;
}

/* A call over its function's threshold: who made it, when it ended, the
 * registers an unwinder starts from, and the top of its user stack. */
static __always_inline void record_slow_call(struct pt_regs* ctx, __u32 fn_id, __u64 duration_ns,
                                             const struct call_split* split, __u32 flags, __u64 gen,
                                             __u64 value) {
  struct fl_slow_call* slow = bpf_ringbuf_reserve(&slow_calls, sizeof(*slow), 0);
  if (!slow) {
    count_lost(fn_id, SLOW_DROPPED);
    return;
  }
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  slow->duration_ns = duration_ns;
  slow->end_ns = bpf_ktime_get_ns();
  slow->runnable_ns = split ? split->runnable_ns : 0;
  slow->blocked_ns = split ? split->blocked_ns : 0;
  slow->cgroup_id = bpf_get_current_cgroup_id();
  slow->fn_id = fn_id;
  slow->tgid = (__u32)(pid_tgid >> 32);
  slow->tid = (__u32)pid_tgid;
  slow->flags = flags | (split ? FL_EVENT_SPLIT : 0);
  bpf_get_current_comm(slow->comm, sizeof(slow->comm));
  slow->regs.ip = ctx->ip;
  slow->regs.sp = ctx->sp;
  slow->regs.bp = ctx->bp;
  slow->regs.bx = ctx->bx;
  slow->regs.r12 = ctx->r12;
  slow->regs.r13 = ctx->r13;
  slow->regs.r14 = ctx->r14;
  slow->regs.r15 = ctx->r15;
  slow->stack_bytes = copy_user_stack(slow->stack, ctx->sp);
  slow->gen = (__u32)gen;
  slow->value = value;
  /* Rare and worth seeing soon: the reader raises the threshold from it. */
  bpf_ringbuf_submit(slow, BPF_RB_FORCE_WAKEUP);
}

/* --slowest: false when the call is under the function's floor (not among
 * the interval's K slowest); otherwise counts it as sent and raises the
 * floor. Races between CPUs only lower the floor: each value read is a
 * duration sent this interval, from K distinct entries. */
static __always_inline bool over_slow_floor(__u32 fn_id, __u64 duration_ns, __u64 gen, __u32 k) {
  if (k == 0 || k > FL_MAX_SLOWEST) return true;
  struct fl_slow_floor* floor = bpf_map_lookup_elem(&slow_floors, &fn_id);
  if (!floor) return true;
  if (floor->gen != gen) {
    floor->gen = gen;
    floor->sent = 0;
    floor->floor_ns = 0;
  }
  if (duration_ns < floor->floor_ns) return false;
  __u64 sent = __sync_fetch_and_add(&floor->sent, 1);
  __u32 index = (__u32)(sent % k);
  /* The compiler knows index < k <= FL_MAX_SLOWEST; the verifier must see it. */
  asm volatile("" : "+r"(index));
  if (index >= FL_MAX_SLOWEST) return true;
  floor->durations[index] = duration_ns;
  if (sent + 1 < k) return true;
  __u64 smallest = duration_ns;
  for (__u32 i = 0; i < FL_MAX_SLOWEST; i++) {
    if (i >= k) break;
    if (floor->durations[i] < smallest) smallest = floor->durations[i];
  }
  if (smallest > floor->floor_ns) floor->floor_ns = smallest;
  return true;
}

/* Takes the probes' own cost off a completed call and records it (and its
 * split, when there is one) the way its function is aggregated right now;
 * a call over the function's threshold also goes out with its stack.
 * `exit_flags`: FL_SLOW_AT_RET when the exit probe stands on the `ret`. */
static __always_inline void record_call(struct pt_regs* ctx, __u32 fn_id, __u64 duration_ns,
                                        const struct call_split* split, __u32 exit_flags,
                                        __u64 value, __u64 child_ns, bool plain) {
  struct fl_fn_config* config = bpf_map_lookup_elem(&fn_config, &fn_id);
  if (config && config->subtract_ns) {
    duration_ns = duration_ns > config->subtract_ns ? duration_ns - config->subtract_ns : 0;
  }
  /* --self: the recorded duration less the raw durations of the traced
   * calls that returned inside it (see pop_call). */
  __u64 self_ns = duration_ns > child_ns ? duration_ns - child_ns : 0;
  /* One read of the interval: the floor, the slow record and the event
   * all name the same one. */
  __u64 gen = FL_OPTION(plain, slow_calls_on) ? *(volatile __u64*)&slow_gen : 0;
  if (FL_OPTION(plain, slow_calls_on) && config && duration_ns >= config->slow_ns &&
      over_slow_floor(fn_id, duration_ns, gen, config->slowest_k))
    record_slow_call(ctx, fn_id, duration_ns, split, exit_flags, gen, value);
  __u32 tagged_fn = fn_id | ((gen & 1) ? FL_EVENT_ODD_GEN : 0);
  /* --config: a target's own --by, within the run's. */
  __u32 by = FL_OPTION(plain, series_by);
  if (config && (config->flags & FL_FN_OWN_BY)) by &= config->flags >> FL_FN_BY_SHIFT;
  /* Kernel mode needs a slot; a function without one stays in events mode. */
  bool in_kernel = config && config->mode == FL_MODE_KERNEL && config->slot != FL_NO_SLOT;
  if (in_kernel) {
    record_parts_in_kernel(fn_id, config->slot, duration_ns, split, self_ns, by, value, plain);
  } else if (split || FL_OPTION(plain, split_stride | series_by | self_key_offset)) {
    record_ext_event(tagged_fn, duration_ns, split, by, value, self_ns);
  } else {
    record_as_event(tagged_fn, duration_ns);
  }
}

/* --by retval/argN: the class of a completed call's value: its argument
 * noted at entry, or its return value (RAX at a `ret` and after it). */
static __always_inline __u64 value_of_call(__u64 arg, __u64 result, bool plain) {
  if (FL_OPTION(plain, value_source) == FL_VALUE_ARG) return fl_value_of(value_rule, arg);
  if (FL_OPTION(plain, value_source) == FL_VALUE_RETVAL) return fl_value_of(value_rule, result);
  return 0;
}

/* --cpu-split: where the call just popped (it was at depth + 1) spent its
 * time off the CPU, in `split`; NULL when that is not known (counted). */
static __always_inline const struct call_split* split_of_call(struct fl_shadow_stack* stack,
                                                              __u32 fn_id, __u64 switches,
                                                              struct call_split* split) {
  struct fl_switch_marks* marks = marks_at(stack, stack->depth + 1);
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct fl_thread_switches* thread = bpf_map_lookup_elem(&thread_switches, &tid);
  if (!marks || !thread) {
    count_lost(fn_id, SPLIT_UNKNOWN);
    return NULL;
  }
  settle_unseen_return(thread, bpf_get_current_task_btf());
  thread->in_call = stack->depth;
  /* Now and then a context switch does not reach the sched_switch program
   * (the kernel counted more switch-outs than it saw, or the thread came
   * back to the CPU unseen at a time not known): the split of that call is
   * unknown, its wall time is still right. */
  if (switches - marks->kernel_switches != thread->outs - marks->outs ||
      marks->outs < thread->untimed_outs) {
    count_lost(fn_id, SPLIT_UNKNOWN);
    return NULL;
  }
  split->runnable_ns = thread->runnable_ns - marks->runnable_ns;
  split->blocked_ns = thread->blocked_ns - marks->blocked_ns;
  return split;
}

static __always_inline int complete_call(struct pt_regs* ctx, __u64 entry_sp, __u64 now,
                                         __u64 switches, __u32 exit_flags, bool plain) {
  __u32 fn_id = (__u32)bpf_get_attach_cookie(ctx);
  struct fl_shadow_stack* stack =
      bpf_task_storage_get(&shadow_stacks, bpf_get_current_task_btf(), 0, 0);
  if (!stack) return 0;
  __u64 duration_ns, arg = 0, child_ns = 0;
  if (!pop_call(stack->frames, FL_MAX_DEPTH, &stack->depth, fn_id, entry_sp, now, &duration_ns,
                &arg, &child_ns, plain))
    return 0;
  __u64 value = value_of_call(arg, ctx->ax, plain);
  /* One record_call for every case: each of its copies is thousands of
   * instructions the verifier goes over at every start. */
  struct call_split split;
  const struct call_split* known =
      FL_OPTION(plain, split_stride) ? split_of_call(stack, fn_id, switches, &split) : NULL;
  record_call(ctx, fn_id, duration_ns, known, exit_flags, value, child_ns, plain);
  return 0;
}

/* Return probe: runs after `ret`, so the return address was popped. */
static __always_inline int return_from_call(struct pt_regs* ctx, bool plain) {
  const __u64 switches = switches_before_clock(plain);
  __u64 now = bpf_ktime_get_ns();
  if (filtered_out()) return 0;
  return complete_call(ctx, PT_REGS_SP(ctx) - 8, now, switches, 0, plain);
}

FL_BOTH_BUILDS("uretprobe", BPF_KRETPROBE, fl_return, return_from_call)

/* Probe on a `ret` instruction of the function: runs before it, with the
 * return address still at [sp]. Used where a return probe would break C++
 * unwinding (it replaces the return address with a trampoline the unwinder
 * has no frame info for). */
static __always_inline int exit_from_call(struct pt_regs* ctx, bool plain) {
  const __u64 switches = switches_before_clock(plain);
  __u64 now = bpf_ktime_get_ns();
  if (filtered_out()) return 0;
  return complete_call(ctx, PT_REGS_SP(ctx), now, switches, FL_SLOW_AT_RET, plain);
}

FL_BOTH_BUILDS("uprobe", BPF_KPROBE, fl_exit, exit_from_call)

/* A thread that ends with traced calls in flight (pthread_exit or exit
 * inside one, killed inside one): they can never return, and its shadow
 * stack goes with it. Each is counted lost here, as a frame a later call
 * shows abandoned is. */
SEC("raw_tp/sched_process_exit")
int fl_thread_exit(void* ctx) {
  /* The exiting thread is the current one. A raw tracepoint, not tp_btf: a
   * tp_btf program makes libbpf read and parse the kernel's whole BTF
   * (/sys/kernel/btf/vmlinux, ~5 MB: ~8 ms of every start here), which
   * nothing else in this object needs without --cpu-split. */
  struct task_struct* task = bpf_get_current_task_btf();
  struct fl_shadow_stack* stack = bpf_task_storage_get(&shadow_stacks, task, 0, 0);
  if (!stack || !stack->depth) return 0;
  stack->depth = unwind_below(stack->frames, FL_MAX_DEPTH, stack->depth, ~0ull);
  return 0;
}

/* --- --cpu-split -----------------------------------------------------------
 * Runs on every context switch of the machine while loaded (only with
 * --cpu-split). A thread with a traced call in flight notes when and how it
 * left the CPU, and adds the time it was out when it comes back; every
 * other thread costs two hash lookups. */
SEC("tp_btf/sched_switch")
int BPF_PROG(fl_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next,
             unsigned int prev_state) {
  __u64 now = bpf_ktime_get_ns();
  __u32 prev_tid = prev->pid, next_tid = next->pid;
  struct fl_thread_switches* out = bpf_map_lookup_elem(&thread_switches, &prev_tid);
  if (out && out->in_call) {
    /* Still marked out: it came back unseen. */
    settle_unseen_return(out, prev);
    out->out_since_ns = now;
    /* Preempted, or yielding while running: still on a run queue. */
    out->out_runnable = preempt || prev_state == 0 /* TASK_RUNNING */;
    out->out_run_delay_ns = prev->sched_info.run_delay;
    out->out_arrivals = prev->sched_info.pcount;
  }
  if (out) out->outs++;
  struct fl_thread_switches* in = bpf_map_lookup_elem(&thread_switches, &next_tid);
  if (in && in->out_since_ns) {
    __u64 out_ns = now - in->out_since_ns;
    if (in->out_runnable)
      in->runnable_ns += out_ns;
    else
      in->blocked_ns += out_ns;
    in->out_since_ns = 0;
  }
  return 0;
}

/* --- Go code --------------------------------------------------------------
 * In Go >= 1.17 on amd64 (register ABI), R14 holds the running goroutine's g
 * in Go functions; g.stack.lo and g.stack.hi are its first two words. */

/* A goroutine's stack exists while it has a traced call in flight: made at
 * its outermost entry, deleted when that call returns, so the map holds the
 * goroutines inside traced calls and is allocated as they come. Full, an
 * entry is refused and counted lost (no eviction: an LRU would drop a call
 * in flight without telling). Stacks left by goroutines that ended inside a
 * call are taken by user space (collect/open_frames), counted lost. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, FL_GO_MAX_GOROUTINES); /* 1 when no Go function is traced */
  __type(key, struct fl_go_key);
  __type(value, struct fl_go_stack);
} go_stacks SEC(".maps");

/* What a goroutine's shadow stack starts as. */
const struct fl_go_stack empty_go_stack = {};

/* The goroutine running this Go code and the virtual stack pointer of the
 * current frame. False where R14 is not a g whose stack holds SP (assembly
 * ABI0 code, cgo): such a call cannot be paired per goroutine. */
static __always_inline bool read_goroutine(struct pt_regs* ctx, __u32 goid_offset, __u64* goid,
                                           __u64* goid_at, __u64* stack_hi) {
  if (!goid_offset) return false;
  __u64 g = ctx->r14;
  __u64 bounds[2]; /* g.stack.lo, g.stack.hi */
  if (bpf_probe_read_user(bounds, sizeof(bounds), (const void*)g)) return false;
  __u64 sp = PT_REGS_SP(ctx);
  if (sp < bounds[0] || sp >= bounds[1]) return false;
  *goid_at = g + goid_offset;
  if (bpf_probe_read_user(goid, sizeof(*goid), (const void*)*goid_at)) return false;
  *stack_hi = bounds[1];
  return true;
}

static __always_inline bool current_goroutine(struct pt_regs* ctx,
                                              const struct fl_fn_config* config,
                                              struct fl_go_key* key, __u64* virtual_sp,
                                              __u64* goid_at) {
  __u64 goid, stack_hi;
  if (!read_goroutine(ctx, config->goid_offset, &goid, goid_at, &stack_hi)) return false;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  key->goid = goid;
  key->tgid = (__u32)(pid_tgid >> 32);
  key->tid = goid ? 0 : (__u32)pid_tgid;
  *virtual_sp = FL_GO_STACK_TOP - (stack_hi - PT_REGS_SP(ctx));
  return true;
}

/* Entry of a Go function, placed where SP is still the caller's: on the
 * stack check's branch, or at the first instruction. */
SEC("uprobe")
int BPF_KPROBE(fl_go_entry) {
  if (filtered_out()) return 0;
  __u32 fn_id = (__u32)bpf_get_attach_cookie(ctx);
  struct fl_fn_config* config = bpf_map_lookup_elem(&fn_config, &fn_id);
  if (!config) return 0;
  /* The stack check failed: morestack runs, then the function starts again
   * and this probe fires once more for the same call. */
  if ((config->flags & FL_FN_GO_STACK_CHECK) && (ctx->flags & (FL_EFLAGS_CF | FL_EFLAGS_ZF)))
    return 0;
  struct fl_go_key key = {};
  __u64 virtual_sp, goid_at;
  if (!current_goroutine(ctx, config, &key, &virtual_sp, &goid_at)) {
    count_lost(fn_id, LOST_DEPTH);
    return 0;
  }
  struct fl_go_stack* stack = bpf_map_lookup_elem(&go_stacks, &key);
  if (!stack) {
    /* No room (more goroutines in traced calls than --go-goroutines): lost. */
    bpf_map_update_elem(&go_stacks, &key, &empty_go_stack, BPF_NOEXIST);
    stack = bpf_map_lookup_elem(&go_stacks, &key);
    if (!stack) {
      count_lost(fn_id, LOST_DEPTH);
      return 0;
    }
    stack->goid_at = goid_at;
  }
  bool pushed;
  stack->depth = push_call(stack->frames, FL_GO_MAX_DEPTH, stack->depth, fn_id, virtual_sp,
                           value_source == FL_VALUE_ARG ? go_word(ctx, value_index) : 0, &pushed);
  return 0;
}

/* A `ret` of a Go function: the return address is still at [SP], where it
 * was at entry. */
SEC("uprobe")
int BPF_KPROBE(fl_go_exit) {
  __u64 now = bpf_ktime_get_ns();
  if (filtered_out()) return 0;
  __u32 fn_id = (__u32)bpf_get_attach_cookie(ctx);
  struct fl_fn_config* config = bpf_map_lookup_elem(&fn_config, &fn_id);
  if (!config) return 0;
  struct fl_go_key key = {};
  __u64 virtual_sp, goid_at;
  if (!current_goroutine(ctx, config, &key, &virtual_sp, &goid_at)) return 0;
  struct fl_go_stack* stack = bpf_map_lookup_elem(&go_stacks, &key);
  if (!stack) return 0;
  __u64 duration_ns, arg = 0, child_ns = 0;
  bool popped = pop_call(stack->frames, FL_GO_MAX_DEPTH, &stack->depth, fn_id, virtual_sp, now,
                         &duration_ns, &arg, &child_ns, false);
  /* Out of its last traced call: the goroutine's room goes back to the map. */
  if (stack->depth == 0) bpf_map_delete_elem(&go_stacks, &key);
  if (popped) {
    /* The results are in their registers at the `ret`: word value_index. */
    __u64 result = value_source == FL_VALUE_RETVAL ? go_word(ctx, value_index) : 0;
    record_call(ctx, fn_id, duration_ns, NULL, FL_SLOW_AT_RET, value_of_call(arg, result, false),
                child_ns, false);
  }
  return 0;
}

/* --- Spans ------------------------------------------------------------------
 * A start point stores the time under the span's key; the end point looks
 * the key up, deletes it and records the duration under the span's function
 * id, the way a call of a function is recorded (events or kernel slot).
 * The map of open spans is a plain hash, preallocated: an LRU would evict
 * an open span without telling, here a start with no room is refused and
 * counted (span_lost.full), and a start of a key already open replaces it and
 * counts the old one (span_lost.reused). Spans still open when the run ends are
 * counted by user space (collect/span_open). */

/* Fixed before load: the function id of span 0 (spans follow the functions). */
const volatile __u32 span_first_fn = 0;

/* By span index. */
FL_NUMBERED_ARRAY(BPF_MAP_TYPE_ARRAY, struct fl_span_config) span_config SEC(".maps");
FL_NUMBERED_ARRAY(BPF_MAP_TYPE_PERCPU_ARRAY, struct fl_span_lost) span_lost SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* --span-capacity when spans are traced */
  __type(key, struct fl_span_key);
  __type(value, struct fl_span_open);
} open_spans SEC(".maps");

/* What a span's probe counts: the fl_span_lost counter it adds to. */
enum span_count {
  SPAN_REUSED = __builtin_offsetof(struct fl_span_lost, reused),
  SPAN_FULL = __builtin_offsetof(struct fl_span_lost, full),
  SPAN_UNSTARTED = __builtin_offsetof(struct fl_span_lost, unstarted),
};

static __always_inline void count_span(__u32 index, enum span_count what) {
  count_at(&span_lost, index, what);
}

/* A point's value: argument N at an entry, the return value at a return
 * (System V); in Go code, integer word N of the arguments or the first of
 * the results (Go's register ABI). */
static __always_inline __u64 span_value(struct pt_regs* ctx, __u32 source, bool go) {
  if (go) return go_word(ctx, source == FL_SPAN_VALUE_RET ? 0 : source);
  if (source == FL_SPAN_VALUE_RET) return FL_REG(ax);
  __u64 regs[6] = {FL_REG(di), FL_REG(si), FL_REG(dx), FL_REG(cx), FL_REG(r8), FL_REG(r9)};
  return source < 6 ? regs[source] : 0;
}

/* The key the point makes; false when it makes none: a Go point whose
 * goroutine cannot be read (R14 is no g here: assembly code, cgo). */
static __always_inline bool span_key_of(struct pt_regs* ctx, const struct fl_span_config* span,
                                        bool start, struct fl_span_key* key) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  const bool go = span->flags & FL_SPAN_GO;
  key->fn_id = span->fn_id;
  key->tgid = (__u32)(pid_tgid >> 32);
  if (span->flags & FL_SPAN_BY_VALUE) {
    if (span->flags & FL_SPAN_ANY_PROCESS) key->tgid = 0;
    key->value = span_value(ctx, start ? span->start_value : span->end_value, go);
    return true;
  }
  if (!go) {
    key->value = (__u32)pid_tgid;
    return true;
  }
  /* A goroutine moves between threads: it is the one that starts and ends. */
  __u64 goid, goid_at, stack_hi;
  if (!read_goroutine(ctx, start ? span->start_goid_offset : span->end_goid_offset, &goid, &goid_at,
                      &stack_hi))
    return false;
  /* goid 0 runs on a thread's own stack (g0): that thread, apart from goids. */
  key->value = goid ? goid : ((__u64)1 << 63) | (__u32)pid_tgid;
  return true;
}

/* What both ends of a span begin with: the span this probe is a point of
 * (its cookie holds the index) and the key the point makes, from the value
 * `start` says (the start's or the end's). NULL when the process is filtered
 * out, the index has no span, the point is a Go entry whose stack check
 * failed (it fires again once morestack has run), or it makes no key (an
 * end then counts as one without a start). */
static __always_inline struct fl_span_config* span_point(struct pt_regs* ctx, bool start,
                                                         __u32* index, struct fl_span_key* key) {
  if (filtered_out()) return NULL;
  const __u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
  *index = cookie & ~FL_SPAN_COOKIE_AT_RET;
  struct fl_span_config* span = bpf_map_lookup_elem(&span_config, index);
  if (!span) return NULL;
  const __u32 check = start ? FL_SPAN_START_GO_STACK_CHECK : FL_SPAN_END_GO_STACK_CHECK;
  /* Set only for a point at a Go function's entry (never at its rets). */
  if ((span->flags & check) && (ctx->flags & (FL_EFLAGS_CF | FL_EFLAGS_ZF))) return NULL;
  if (!span_key_of(ctx, span, start, key)) {
    if (!start) count_span(*index, SPAN_UNSTARTED);
    return NULL;
  }
  return span;
}

SEC("uprobe")
int BPF_KPROBE(fl_span_start) {
  __u32 index = 0;
  struct fl_span_key key = {};
  if (!span_point(ctx, true, &index, &key)) return 0;
  struct fl_span_open open = {.start_ns = bpf_ktime_get_ns()};
  long rc = bpf_map_update_elem(&open_spans, &key, &open, BPF_NOEXIST);
  if (rc == -17 /* EEXIST */) {
    /* Started again before its end was seen: the open one can never be
     * paired right; it is lost, the new start takes its place. */
    count_span(index, SPAN_REUSED);
    bpf_map_update_elem(&open_spans, &key, &open, BPF_ANY);
  } else if (rc) {
    count_span(index, SPAN_FULL);
  }
  return 0;
}

SEC("uprobe")
int BPF_KPROBE(fl_span_end) {
  __u64 now = bpf_ktime_get_ns();
  __u32 index = 0;
  struct fl_span_key key = {};
  struct fl_span_config* span = span_point(ctx, false, &index, &key);
  if (!span) return 0;
  struct fl_span_open* open = bpf_map_lookup_elem(&open_spans, &key);
  if (!open) {
    count_span(index, SPAN_UNSTARTED);
    return 0;
  }
  __u64 start_ns = open->start_ns;
  /* Only the end that deletes the key records it: two ends of one key on
   * two CPUs count one span. */
  if (bpf_map_delete_elem(&open_spans, &key)) return 0;
  __u32 flags = ((__u32)bpf_get_attach_cookie(ctx) & FL_SPAN_COOKIE_AT_RET) ? FL_SLOW_AT_RET : 0;
  record_call(ctx, span->fn_id, now > start_ns ? now - start_ns : 0, NULL, flags, 0, 0, false);
  return 0;
}
