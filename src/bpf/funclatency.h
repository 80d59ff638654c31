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
  __u32 fn_id;
  __u32 tgid;
};

/* Per-function, per-CPU totals of kernel-mode calls. Only ever grow; user
 * space sums CPUs and subtracts the previous snapshot. */
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
  __u64 unreturned; /* frames that never returned: exception, longjmp, return probe limit */
  __u64 depth;      /* calls nested deeper than the shadow stack holds */
  __u64 ringbuf;    /* completed calls whose event could not be reserved */
  __u64 reserved;
};

/* A call in flight on one thread. `sp` is the stack pointer at entry, which
 * is where the return address sits; the return probe sees sp + 8. */
struct fl_frame {
  __u64 sp;
  __u64 start_ns;
  __u32 fn_id;
  __u32 reserved;
};

struct fl_shadow_stack {
  __u32 depth;
  __u32 reserved;
  struct fl_frame frames[FL_MAX_DEPTH];
};

/* The function's own code jumps to the probed entry instruction (a self
 * tail call compiled as a loop): an entry at the stack pointer of the
 * function's live frame is that jump, not a new call. */
#define FL_FN_JUMPS_TO_ENTRY 1u

/* Per-function settings user space may change while tracing. */
struct fl_fn_config {
  __u32 mode;        /* enum fl_mode */
  __u32 flags;       /* FL_FN_* */
  __u64 subtract_ns; /* the probes' own cost, taken off every duration */
};

/* floor(log2(v)) for v > 0, branch by branch: clang 14's BPF backend
 * cannot lower __builtin_clzll. */
static inline __u32 fl_log2(__u64 v) {
  __u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) r += 1;
  return r;
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
