/* The ABI between funclatency.bpf.c and the C++ side: plain fixed-width
 * structs, no pointers. Included by BPF C (vmlinux.h types) and by C++
 * (<linux/types.h>); C++ static_asserts the sizes. */
#ifndef FUNCLATENCY_BPF_ABI_H
#define FUNCLATENCY_BPF_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Fine buckets: values below FL_EXACT_LIMIT get a bucket each; above, every
 * power-of-two octave is split into FL_SUB_BUCKETS equal parts, so a bucket
 * spans at most 1/16 of its lower bound (percentile error <= 3.2% at the
 * midpoint). Octaves are whole sets of fine buckets, so log2 rows are exact. */
#define FL_SUB_BITS 4
#define FL_SUB_BUCKETS (1u << FL_SUB_BITS)
#define FL_EXACT_LIMIT (2u * FL_SUB_BUCKETS)
/* Values at or above 2^FL_MAX_OCTAVE_EXCL land in the last bucket. */
#define FL_MAX_OCTAVE_EXCL 48
#define FL_NUM_BUCKETS ((FL_MAX_OCTAVE_EXCL - FL_SUB_BITS + 1) * FL_SUB_BUCKETS)
/* log2 rows as libbpf-tools prints them: row 0 holds 0 and 1, row r holds
 * [2^r, 2^(r+1)). */
#define FL_LOG2_ROWS FL_MAX_OCTAVE_EXCL

/* The kernel keeps at most 64 pending return probes per thread, so a deeper
 * shadow stack could never be popped by a return. */
#define FL_MAX_DEPTH 64

enum fl_mode {
  FL_MODE_EVENTS = 0, /* one ring buffer record per call */
  FL_MODE_KERNEL = 1, /* per-CPU buckets aggregated in the kernel */
};

/* One ring buffer record: a completed call. */
struct fl_event {
  __u64 duration_ns;
  __u32 fn_id; /* with FL_EVENT_ODD_GEN when set */
  __u32 tgid;
};

/* --slowest/--slower-than: set in an event's fn_id when slow_gen was odd as
 * the call ended. The probe decided whether to send the call's stack under
 * that interval's floor, so user space counts the call in that interval too
 * (see TraceSession::emit), whichever drain brings it. */
#define FL_EVENT_ODD_GEN (1u << 31)

/* With --cpu-split or --by, a record says more about the call: how long it
 * was switched out, runnable (waiting for a CPU) and sleeping (on-CPU is the
 * rest; valid with FL_EVENT_SPLIT), and who made it. */
#define FL_EVENT_SPLIT 1u
/* --self: the record carries the call's exclusive time (self_ns). */
#define FL_EVENT_SELF 2u
struct fl_event_ext {
  struct fl_event call;
  __u64 runnable_ns;
  __u64 blocked_ns;
  __u64 cgroup_id; /* cgroup v2 id of the calling task */
  char comm[16];   /* the calling thread's command */
  __u32 flags;     /* FL_EVENT_* */
  __u32 reserved;
  __u64 value;   /* --by retval/argN: the call's value class (fl_value_of) */
  __u64 self_ns; /* --self: valid with FL_EVENT_SELF */
};

/* --by: which parts of a caller's identity make a series. */
#define FL_BY_PID 1u
#define FL_BY_COMM 2u
#define FL_BY_CGROUP 4u
/* --by retval[:RULE] / argN[:BUCKETS]: a value of the call itself (its
 * return value's class, or an argument's bucket), fl_value_of in BPF. */
#define FL_BY_VALUE 8u

/* Where the value of FL_BY_VALUE comes from (read-only config value_source). */
enum fl_value_source {
  FL_VALUE_NONE = 0,
  FL_VALUE_RETVAL = 1, /* at the exit: RAX (Go: result word value_index) */
  FL_VALUE_ARG = 2,    /* at the entry: argument register value_index */
};

/* How a raw register becomes the series' value (read-only value_rule). The
 * 32-bit rules read an `int`: the ABI leaves a register's upper half
 * undefined for one. */
enum fl_value_rule {
  FL_RULE_ZERO = 0,     /* int: 0 when 0 (ok), else 1 (error) */
  FL_RULE_ERRNO = 1,    /* int: 0 when >= 0 (ok), else the negative value */
  FL_RULE_NULL = 2,     /* pointer: 0 when NULL, else 1 (ok) */
  FL_RULE_BOOL = 3,     /* C bool (low byte): 0 false, 1 true */
  FL_RULE_RAW32 = 4,    /* int: the value, sign-extended */
  FL_RULE_RAW64 = 5,    /* the whole register */
  FL_RULE_LOG2 = 6,     /* unsigned: 0 for 0, else floor(log2(v)) + 1 */
  FL_RULE_GO_ERROR = 7, /* Go error's first word: 0 nil (ok), else 1 (error) */
};

/* --by in kernel mode: a series' per-CPU totals are keyed by this; the parts
 * --by leaves out are 0 (comm is kept with pid: a process series shows its
 * command). A function's calls beyond the map's room go to its
 * fn_stats entry, the series `other`. */
struct fl_series_key {
  __u32 fn_id;
  __u32 part; /* enum fl_call_part */
  __u32 tgid;
  __u32 reserved;
  __u64 cgroup_id;
  char comm[16];
  __u64 value; /* --by retval/argN: fl_value_of the call's value */
};

/* -c/--cgroup: at most this many cgroups to trace (each with its subtree). */
#define FL_MAX_CGROUP_FILTERS 8

/* With --cpu-split, fn_stats holds FL_CALL_PARTS entries per slot: the wall
 * time at the slot, and part k at slot + k * (number of slots). */
enum fl_call_part {
  FL_PART_WALL = 0,
  FL_PART_ONCPU = 1,
  FL_PART_RUNNABLE = 2,
  FL_PART_BLOCKED = 3,
  FL_CALL_PARTS = 4,
  /* --self: the call's exclusive time. In fn_stats it follows the parts
   * there are (at slot + self_key_offset); in series keys it is this. */
  FL_PART_SELF = 4,
};

/* Per-slot, per-CPU totals of kernel-mode calls (a slot is a function's while
 * it is in kernel mode, and cools off before another gets it). Only ever
 * grow; user space sums CPUs and subtracts the previous snapshot. */
struct fl_fn_stats {
  __u64 count;
  __u64 sum_ns;
  __u64 min_ns; /* 0 while unset */
  __u64 max_ns;
  __u64 buckets[FL_NUM_BUCKETS];
};

/* Per-function, per-CPU counts of calls that could not be timed, in both
 * modes. Small, so user space can read them for every function cheaply. */
struct fl_fn_lost {
  __u64 unreturned; /* frames that never returned: exception, longjmp, panic, return probe limit */
  __u64 depth;      /* calls that could not be timed: nested deeper than the shadow stack holds,
                       or Go code entered where R14 is not the running goroutine */
  __u64 ringbuf;    /* completed calls whose event could not be reserved */
  /* --cpu-split: completed calls (counted) whose split is unknown: a context
   * switch during the call did not reach the sched_switch program. */
  __u64 split_unknown;
  /* --slowest/--slower-than: calls over the function's threshold whose
   * record (with its stack) could not be reserved. Counted calls, not lost. */
  __u64 slow_dropped;
};

/* A call in flight on one thread. `sp` is the stack pointer at entry, which
 * is where the return address sits; the return probe sees sp + 8. */
struct fl_frame {
  __u64 sp;
  __u64 start_ns;
  __u32 fn_id;
  __u32 reserved;
  __u64 arg;      /* --by argN: the argument's raw value at entry */
  __u64 child_ns; /* --self: the raw durations of its traced calls that returned */
};

/* --cpu-split: a thread's running totals of time switched out when a frame
 * was entered; the exit subtracts them from the totals then. */
struct fl_switch_marks {
  __u64 runnable_ns;
  __u64 blocked_ns;
  __u64 outs;            /* switch-outs the sched_switch program saw */
  __u64 kernel_switches; /* the task's nvcsw + nivcsw: every switch-out */
};

struct fl_shadow_stack {
  __u32 depth;
  __u32 reserved;
  struct fl_frame frames[FL_MAX_DEPTH];
  struct fl_switch_marks marks[FL_MAX_DEPTH]; /* --cpu-split */
};

/* --cpu-split: a thread's running totals of time switched out, kept by the
 * sched_switch program in a hash map by thread id (map lookups never fail
 * for a busy lock the way task storage can inside a context switch). */
struct fl_thread_switches {
  __u64 runnable_ns;  /* switched out while runnable: waiting for a CPU */
  __u64 blocked_ns;   /* switched out while sleeping */
  __u64 out_since_ns; /* 0 while on a CPU */
  __u32 out_runnable; /* how it left the CPU at out_since_ns */
  __u32 in_call;      /* a traced call is in flight: only then is time noted */
  __u64 outs;         /* switch-outs seen, to check against the kernel's count */
  /* The scheduler's own account of the thread (task->sched_info) as it left
   * at out_since_ns: its time waiting on a run queue and its arrivals on a
   * CPU. A return to the CPU no sched_switch program saw is timed from them
   * (see settle_unseen_return in funclatency.bpf.c). */
  __u64 out_run_delay_ns;
  __u64 out_arrivals;
  /* `outs` when the thread left the CPU the last time whose return could
   * not be timed: a call marked before that (its marks' outs lower) has an
   * unknown split. */
  __u64 untimed_outs;
};
/* Threads the switch totals are kept for (an LRU map: threads that ended go
 * first). */
#define FL_MAX_SPLIT_THREADS 16384

/* Go code: calls are paired per goroutine, because a goroutine that parks
 * inside a call resumes on any thread. The runtime copies a goroutine's stack
 * when it grows or shrinks, so a frame is known by its distance from the top
 * of the goroutine's stack (g.stack.hi - SP), which survives a copy. The
 * shadow stack stores it as a virtual stack pointer, FL_GO_STACK_TOP minus the
 * distance, so deeper frames have smaller values as on a real stack. */
#define FL_GO_STACK_TOP (1ull << 62)
/* Frames per goroutine: ret-instruction exits have no kernel limit; deeper
 * calls are counted as not timed. */
#define FL_GO_MAX_DEPTH 16
/* Goroutines with a traced call in flight at once, by default (--go-goroutines).
 * The map is allocated as goroutines enter: the bound costs 16 B a hash bucket. */
#define FL_GO_MAX_GOROUTINES 8192

/* goid is unique for the life of a process (g structures are reused, goids
 * never): stale frames of an ended goroutine can never pair. On a thread's
 * system stack (g0, goid 0) the thread id tells the g0s apart. */
struct fl_go_key {
  __u64 goid;
  __u32 tgid;
  __u32 tid; /* 0 unless goid is 0 */
};

struct fl_go_stack {
  __u32 depth;
  __u32 reserved;
  /* Where the goroutine's goid lies in its process (g + goid offset): a
   * goroutine that ended inside a call leaves its stack behind, and user
   * space sees it ended when its g holds another goid there. */
  __u64 goid_at;
  struct fl_frame frames[FL_GO_MAX_DEPTH];
};

/* The function's own code jumps to the probed entry instruction (a self
 * tail call compiled as a loop): an entry at the stack pointer of the
 * function's live frame is that jump, not a new call. */
#define FL_FN_JUMPS_TO_ENTRY 1u
/* Go code whose entry probe sits on the last branch of its stack-check
 * prologue (`cmp rsp, [r14+0x10]; jbe morestack`). With CF or ZF set the
 * branch is taken: morestack grows the stack (or preempts) and the function
 * starts again, so that firing is not yet the call. Each call is thus
 * recorded once, when its stack check passes. */
#define FL_FN_GO_STACK_CHECK 2u
/* --config: the function's target has a --by of its own, FL_BY_* bits
 * at FL_FN_BY_SHIFT, within the run's series_by (the union of every
 * target's): its calls are split by those only. */
#define FL_FN_OWN_BY 4u
#define FL_FN_BY_SHIFT 8
/* x86 EFLAGS bits the stack check's `jbe` tests. */
#define FL_EFLAGS_CF (1u << 0)
#define FL_EFLAGS_ZF (1u << 6)

/* Per-function settings user space may change while tracing. */
struct fl_fn_config {
  __u32 mode;        /* enum fl_mode */
  __u32 flags;       /* FL_FN_* */
  __u64 subtract_ns; /* the probes' own cost, taken off every duration */
  __u32 goid_offset; /* Go code: offset of goid in runtime.g (by Go version) */
  __u32 slot;        /* fn_stats entry of its kernel-mode totals, or FL_NO_SLOT */
  /* --slowest/--slower-than: a call at least this long (after subtract_ns)
   * also sends an fl_slow_call with its stack; FL_NO_THRESHOLD: none. */
  __u64 slow_ns;
  /* --slowest K (of the function's target): the probes' floor keeps to the
   * K slowest; 0: every call over slow_ns is sent (--slower-than). */
  __u32 slowest_k;
  __u32 reserved;
};

#define FL_NO_THRESHOLD 0xffffffffffffffffull

/* --slowest/--slower-than: how much of the user stack a slow call's record
 * copies, from the stack pointer at the exit probe up. Debian's binaries
 * have no frame pointers, so user space unwinds this copy with the
 * binaries' .eh_frame, as perf --call-graph dwarf does. */
#define FL_STACK_BYTES 16384

/* --slowest K: K at most. */
#define FL_MAX_SLOWEST 100

/* --slowest K: the kernel's own bound on a function's threshold, so a burst
 * of calls is not sent while user space has yet to raise it. The K records
 * sent last are K calls of this interval, so the smallest of them is at most
 * the interval's K-th slowest: a call under it is not among the K slowest.
 * `gen` is the interval (the global slow_gen) the entry is about; a new one
 * starts over. Written by the probes only. */
struct fl_slow_floor {
  __u64 gen;
  __u64 sent;                      /* records sent this interval */
  __u64 floor_ns;                  /* the smallest of the last K sent (once K were sent) */
  __u64 durations[FL_MAX_SLOWEST]; /* the last K sent, round robin */
};

/* The registers an unwinder starts from: the instruction and stack
 * pointers, and the registers a callee preserves (CFI may restore any). */
struct fl_user_regs {
  __u64 ip;
  __u64 sp;
  __u64 bp;
  __u64 bx;
  __u64 r12;
  __u64 r13;
  __u64 r14;
  __u64 r15;
};

/* Where the exit probe stood: at the function's `ret` (the return address
 * at [sp], ip in the function) or after it (a uretprobe: ip in the caller). */
#define FL_SLOW_AT_RET 2u

/* One call over its function's threshold, with the top of its stack. Sent
 * on its own ring buffer (slow_calls), in both modes. flags: FL_EVENT_SPLIT
 * (runnable_ns and blocked_ns valid), FL_SLOW_AT_RET. */
struct fl_slow_call {
  __u64 duration_ns; /* as recorded: after subtract_ns */
  __u64 end_ns;      /* bpf_ktime_get_ns() at the exit probe (CLOCK_MONOTONIC) */
  __u64 runnable_ns;
  __u64 blocked_ns;
  __u64 cgroup_id;
  __u32 fn_id;
  __u32 tgid;
  __u32 tid;
  __u32 flags;
  char comm[16]; /* the thread's name */
  struct fl_user_regs regs;
  __u32 stack_bytes; /* valid bytes of stack[], copied from regs.sp up */
  __u32 gen;         /* slow_gen as the call ended (its low 32 bits) */
  __u8 stack[FL_STACK_BYTES];
  __u64 value; /* --by retval/argN: the call's series value */
};

/* --- Spans ---------------------------------------------------------------
 * A span is a latency from one probe point (a function's entry or return) to
 * another, matched by the thread or by a value. It has a function id after
 * the functions' (so its durations go where a function's go: events or
 * kernel slots), and its settings in span_config at fn_id - span_first_fn. */

/* Where a point's value comes from: argument N (0..5) at an entry, or the
 * return value at a return. */
#define FL_SPAN_VALUE_RET 6u
#define FL_SPAN_VALUE_NONE 7u

/* Matched by a value (else by the thread); within one process unless
 * FL_SPAN_ANY_PROCESS. */
#define FL_SPAN_BY_VALUE 1u
#define FL_SPAN_ANY_PROCESS 2u
/* Both points are Go code: matched by the goroutine (not the thread), values
 * from Go's register ABI; a point's entry probe on Go's stack check fires
 * again after morestack, so a failed check is ignored (FL_FN_GO_STACK_CHECK). */
#define FL_SPAN_GO 4u
#define FL_SPAN_START_GO_STACK_CHECK 8u
#define FL_SPAN_END_GO_STACK_CHECK 16u

/* A span probe's attach cookie: the span's index, with this bit where the
 * return address is at [sp] (an entry or a `ret`; not after a return, where
 * a uretprobe runs), which a slow span's stack unwinding needs. */
#define FL_SPAN_COOKIE_AT_RET (1u << 31)

struct fl_span_config {
  __u32 fn_id;
  __u32 flags;       /* FL_SPAN_* */
  __u32 start_value; /* FL_SPAN_VALUE_* or the argument index (Go: the word) */
  __u32 end_value;
  __u32 start_goid_offset; /* FL_SPAN_GO: goid in runtime.g, per point's binary */
  __u32 end_goid_offset;
};

/* An open span: by thread {fn_id, tgid, tid} (Go: {fn_id, tgid, goid}); by
 * value {fn_id, tgid (0 with FL_SPAN_ANY_PROCESS), value}. */
struct fl_span_key {
  __u32 fn_id;
  __u32 tgid;
  __u64 value;
};

struct fl_span_open {
  __u64 start_ns;
};

/* Per span, per CPU (span_lost, by span index): a start whose key was
 * started again before its end (the new start replaces it) and a start the
 * open-span map had no room for, both spans lost, never paired; and ends
 * whose key no start had (started before the probes, or its start was
 * lost): not spans, not lost. */
struct fl_span_lost {
  __u64 reused;
  __u64 full;
  __u64 unstarted;
};

/* Kernel-mode totals live in a pool of slots (fn_stats entries), given to
 * the functions in kernel mode: per-CPU memory follows what is hot, not
 * functions x CPUs. */
#define FL_NO_SLOT 0xffffffffu

/* floor(log2(v)) for v > 0, halving the bits left at each step: clang 14's
 * BPF backend cannot lower __builtin_clzll. No branches: the verifier would
 * follow each `if` both ways and, the bucket being an index, keep the 64
 * results apart, walking everything after this 64 times (~2.5 ms of every
 * start). A step's bit is 1 when the upper half of what is left is non-zero:
 * that half plus all ones carries into the bit above it. */
static inline __u32 fl_log2(__u64 v) {
  __u64 r = 0;
  for (__u32 half = 32; half > 1; half >>= 1) {
    const __u64 step = (((v >> half) + ((1ull << half) - 1)) >> half) * half;
    r |= step;
    v >>= step;
  }
  return (__u32)(r | (v >> 1));
}

/* The class of raw register value `raw` under `rule`. Shared by BPF and C++
 * (unit tests pin every rule). */
static inline __u64 fl_value_of(__u32 rule, __u64 raw) {
  __s64 as_int = (__s64)(__s32)(__u32)raw;
  if (rule == FL_RULE_ZERO) return (__u32)raw != 0;
  if (rule == FL_RULE_ERRNO) return as_int < 0 ? (__u64)as_int : 0;
  if (rule == FL_RULE_NULL || rule == FL_RULE_GO_ERROR) return raw != 0;
  if (rule == FL_RULE_BOOL) return (__u8)raw != 0;
  if (rule == FL_RULE_RAW32) return (__u64)as_int;
  if (rule == FL_RULE_LOG2) return raw ? fl_log2(raw) + 1 : 0;
  return raw;
}

/* A duration in the display unit: ns / unit_ns. A 64-bit division is the
 * slowest instruction of a kernel-mode return; under 2^32 ns (4.3 s) in usec
 * or msec the multiply and shift a compiler uses for a 32-bit division by
 * that constant gives the same quotient (exact for every 32-bit value: a
 * unit test checks the edges, a brute-force run checked them all). In BPF
 * unit_ns is fixed before load, so the verifier drops the other units'
 * branches. Shared by BPF and C++ like fl_bucket_of. */
static inline __u64 fl_in_units(__u64 ns, __u64 unit_ns) {
  if (ns <= 0xffffffffull) {
    if (unit_ns == 1000) return (ns * 274877907ull) >> 38;
    if (unit_ns == 1000000) return (ns * 1125899907ull) >> 50;
  }
  return ns / unit_ns;
}

/* Fine bucket of a value in the display unit. Shared by BPF and C++ so both
 * paths bucket identically; a unit test checks every octave edge. */
static inline __u32 fl_bucket_of(__u64 value) {
  if (value < FL_EXACT_LIMIT) return (__u32)value;
  __u32 octave = fl_log2(value);
  if (octave >= FL_MAX_OCTAVE_EXCL) return FL_NUM_BUCKETS - 1;
  __u32 sub = (__u32)(value >> (octave - FL_SUB_BITS)) - FL_SUB_BUCKETS;
  return (octave - FL_SUB_BITS + 1) * FL_SUB_BUCKETS + sub;
}

/* Smallest value that falls in fine bucket `bucket`. */
static inline __u64 fl_bucket_low(__u32 bucket) {
  if (bucket < FL_EXACT_LIMIT) return bucket;
  __u32 octave = bucket / FL_SUB_BUCKETS + FL_SUB_BITS - 1;
  __u64 sub = bucket % FL_SUB_BUCKETS;
  return ((__u64)FL_SUB_BUCKETS + sub) << (octave - FL_SUB_BITS);
}

/* log2 row (libbpf-tools' slot) that holds fine bucket `bucket`. */
static inline __u32 fl_row_of_bucket(__u32 bucket) {
  __u64 low = fl_bucket_low(bucket);
  return low < 2 ? 0 : fl_log2(low);
}

#endif
