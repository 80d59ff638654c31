// SPDX-License-Identifier: GPL-2.0
/* The exec watch: tells user space about the processes that start a program
 * a target may follow (tp_btf/sched_process_exec, no /proc polling; every
 * other exec ends here, with no record and no wake-up), and lists the
 * processes already running (an iter/task program), each with the file its
 * code is mapped from. With --follow-hold it also stops a process that
 * starts a program not judged yet, until user space has attached its probes
 * (fl_release) or a bound runs out (fl_release_due), so its first call is
 * timed.
 * Loaded only when TARGETs follow programs into containers (--follow,
 * --config); the tracing object is untouched. */
// clang-format off
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "exec_watch.h"
// clang-format on

char LICENSE[] SEC("license") = "GPL";

#define FL_SIGCONT 18
#define FL_SIGSTOP 19
#define FL_ENOENT 2
#define FL_ESRCH 3

struct task_struct* bpf_task_from_pid(s32 pid) __ksym;
void bpf_task_release(struct task_struct* task) __ksym;
int bpf_send_signal_task(struct task_struct* task, int sig, enum pid_type type, u64 value) __ksym;

/* Only the execs of programs a target may follow come here (exec_names):
 * 16 KB holds 400 records between polls, and user space is woken at once. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 10);
} execs SEC(".maps");

/* exec_watch.h says what the two filters hold. Allocated as filled: a host
 * that follows one program holds a few entries, not the maximum; the kernel
 * still charges each hash map its buckets (~16 B an entry of max_entries). A
 * file known past the maximum is only sent again (user space judges it). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 256);
  __type(key, struct fl_exec_name);
  __type(value, __u8);
} exec_names SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 2048);
  __type(key, struct fl_file_key);
  __type(value, __u8);
} exec_known SEC(".maps");

/* --follow-hold: the processes stopped at their exec, each with the time
 * (bpf_ktime_get_ns) past which it goes on whatever user space does. */
struct fl_held {
  __u64 until_ns;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct fl_held);
} held SEC(".maps");

/* The longest a process is held (0: never held). Set before load. */
const volatile __u64 hold_ns = 0;

/* Records the exec ring had no room for (user space then rescans). */
__u64 exec_dropped = 0;
/* Execs no target can follow, or of files every target judged already:
 * counted here, never sent. */
__u64 exec_skipped = 0;

/* bpf_find_vma's callback: the file the VMA maps. For a file of an overlay
 * mount, vm_file is the layer's own file (the overlay hands mmap over to
 * it), which is what a uprobe on the overlay path attaches to. */
static long note_file(struct task_struct* task, struct vm_area_struct* vma, void* data) {
  struct fl_exec_event* event = data;
  struct file* file = BPF_CORE_READ(vma, vm_file);
  if (!file) return 0;
  struct inode* inode = BPF_CORE_READ(file, f_inode);
  event->ino = BPF_CORE_READ(inode, i_ino);
  event->dev = BPF_CORE_READ(inode, i_sb, s_dev);
  event->flags |= FL_EXEC_FILE_KNOWN;
  return 0;
}

/* The layout of struct mnt_namespace before its id moved into ns_common. */
struct mnt_namespace___seq {
  u64 seq;
} __attribute__((preserve_access_index));

/* The id of `task`'s mount namespace: ns_common's ns_id (6.18+), before
 * that the namespace's own sequence number (either unique while the system
 * runs; the inode number, the last resort, can be reused). A task with none is exiting: it maps no
 * file either, and is sent nowhere. */
static __always_inline __u64 mnt_ns_of(struct task_struct* task) {
  struct mnt_namespace* ns = BPF_CORE_READ(task, nsproxy, mnt_ns);
  if (!ns) return 0;
  if (bpf_core_field_exists(ns->ns.ns_id)) return BPF_CORE_READ(ns, ns.ns_id);
  struct mnt_namespace___seq* old = (void*)ns;
  if (bpf_core_field_exists(old->seq)) return BPF_CORE_READ(old, seq);
  return BPF_CORE_READ(ns, ns.inum);
}

static __always_inline void fill(struct task_struct* task, struct fl_exec_event* event) {
  event->tgid = BPF_CORE_READ(task, tgid);
  struct mm_struct* mm = BPF_CORE_READ(task, mm);
  if (!mm) return;
  __u64 start_code = BPF_CORE_READ(mm, start_code);
  bpf_find_vma(task, start_code, note_file, event, 0);
}

/* Whether `name` (a kernel string) starts like one of exec_names. */
static __always_inline bool named(const char* name) {
  struct fl_exec_name key = {};
  if (!name || bpf_probe_read_kernel_str(key.name, sizeof key.name, name) <= 0) return false;
  return bpf_map_lookup_elem(&exec_names, &key) != 0;
}

/* Whether a target may follow the program this exec starts: by the name it
 * was asked for (comm), its file's own name, or its script's interpreter's. */
static __always_inline bool may_follow(struct linux_binprm* bprm) {
  struct fl_exec_name comm = {};
  bpf_get_current_comm(comm.name, sizeof comm.name);
  if (bpf_map_lookup_elem(&exec_names, &comm)) return true;
  if (named((const char*)BPF_CORE_READ(bprm, file, f_path.dentry, d_name.name))) return true;
  const char* interp = BPF_CORE_READ(bprm, interp);
  if (!interp || interp == BPF_CORE_READ(bprm, filename)) return false;
  char path[128];
  if (bpf_probe_read_kernel_str(path, sizeof path, interp) <= 0) return false;
  __u32 last = 0;
  for (__u32 i = 0; i < sizeof path; i++) {
    if (path[i] == 0) break;
    if (path[i] == '/') last = i + 1;
  }
  return named(interp + last);
}

/* SIGCONT to process `tgid` (a pid of the initial namespace). */
static __always_inline int let_go(__u32 tgid) {
  struct task_struct* task = bpf_task_from_pid((s32)tgid);
  if (!task) return -FL_ESRCH;
  const int result = bpf_send_signal_task(task, FL_SIGCONT, PIDTYPE_TGID, 0);
  bpf_task_release(task);
  return result;
}

/* Stops the current process from its return to user space on: a pending
 * SIGSTOP, which a SIGCONT that comes before that return cancels. */
static __always_inline bool hold(__u32 tgid) {
  struct fl_held entry = {.until_ns = bpf_ktime_get_ns() + hold_ns};
  if (bpf_map_update_elem(&held, &tgid, &entry, BPF_ANY) != 0) return false;
  if (bpf_send_signal(FL_SIGSTOP) != 0) {
    bpf_map_delete_elem(&held, &tgid);
    return false;
  }
  return true;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fl_exec, struct task_struct* task, pid_t old_pid, struct linux_binprm* bprm) {
  if (!may_follow(bprm)) {
    __sync_fetch_and_add(&exec_skipped, 1);
    return 0;
  }
  /* On the stack: bpf_find_vma's callback context must be. */
  struct fl_exec_event event = {};
  fill(task, &event);
  /* Attached by every target; else judged in this mount namespace (its id
   * read only then: a followed program's own execs stop at the first). */
  struct fl_file_key file = {.dev = event.dev, .ino = event.ino, .mnt_ns = FL_EVERY_MNT_NS};
  const bool has_file = (event.flags & FL_EXEC_FILE_KNOWN) != 0;
  bool known = has_file && bpf_map_lookup_elem(&exec_known, &file) != 0;
  if (!known) {
    event.mnt_ns = mnt_ns_of(task);
    file.mnt_ns = event.mnt_ns;
    known = has_file && bpf_map_lookup_elem(&exec_known, &file) != 0;
  }
  if (known) {
    __sync_fetch_and_add(&exec_skipped, 1);
    return 0;
  }
  event.cgroup_id = bpf_get_current_cgroup_id();
  if (hold_ns && hold(event.tgid)) event.flags |= FL_EXEC_HELD;
  if (bpf_ringbuf_output(&execs, &event, sizeof(event), 0) != 0) {
    __sync_fetch_and_add(&exec_dropped, 1);
    /* Nobody will hear of it: the pending stop is taken back at once. */
    if (event.flags & FL_EXEC_HELD) {
      __u32 tgid = event.tgid;
      bpf_map_delete_elem(&held, &tgid);
      bpf_send_signal(FL_SIGCONT);
    }
  }
  return 0;
}

/* User space's release of a held process (its probes are in, or it runs no
 * followed program): its entry goes, then SIGCONT. A process let go already
 * is not signalled again. A syscall program, so that the signal is sent
 * from a process's context (bpf_send_signal_task refuses from a CPU that
 * runs no user memory, as a kernel timer's callback often does), and
 * because the agent has no CAP_KILL. */
SEC("syscall")
int fl_release(struct fl_release_args* args) {
  __u32 tgid = args->tgid;
  if (bpf_map_delete_elem(&held, &tgid) != 0) {
    args->result = -FL_ENOENT;
    return 0;
  }
  args->result = let_go(tgid);
  return 0;
}

struct fl_due {
  __u64 now;
  __u32 left;
};

static long release_if_due(void* map, __u32* tgid, struct fl_held* entry, struct fl_due* due) {
  if (entry->until_ns > due->now) {
    due->left++;
    return 0;
  }
  __u32 pid = *tgid;
  bpf_map_delete_elem(&held, &pid);
  let_go(pid);
  return 0;
}

/* The bound: every process held past its time goes on, probes or not. Run
 * by the agent's guard process (probe/exec_watch.cpp) every few
 * milliseconds, the agent alive or not. Returns how many are still held. */
SEC("syscall")
int fl_release_due(void* ctx) {
  struct fl_due due = {.now = bpf_ktime_get_ns(), .left = 0};
  bpf_for_each_map_elem(&held, release_if_due, &due, 0);
  return (int)due.left;
}

SEC("iter/task")
int fl_scan(struct bpf_iter__task* ctx) {
  struct task_struct* task = ctx->task;
  if (!task) return 0;
  /* One record a process: its thread-group leader. */
  if (task->pid != task->tgid) return 0;
  struct fl_exec_event event = {};
  fill(task, &event);
  if (!(event.flags & FL_EXEC_FILE_KNOWN)) return 0;
  event.mnt_ns = mnt_ns_of(task);
  bpf_seq_write(ctx->meta->seq, &event, sizeof(event));
  return 0;
}
