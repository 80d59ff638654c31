// SPDX-License-Identifier: GPL-2.0
/* The exec watch: tells user space about every process that starts a
 * program (tp_btf/sched_process_exec, no /proc polling), and lists the
 * processes already running (an iter/task program), each with the file its
 * code is mapped from. Loaded only when TARGETs follow programs into
 * containers (--follow, --config); the tracing object is untouched. */
// clang-format off
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "exec_watch.h"
// clang-format on

char LICENSE[] SEC("license") = "GPL";

/* Execs are rare next to calls: 64 KB holds 2,000 records between polls. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 << 10);
} execs SEC(".maps");

/* Records the exec ring had no room for (user space then rescans). */
__u64 exec_dropped = 0;

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

static __always_inline void fill(struct task_struct* task, struct fl_exec_event* event) {
  event->tgid = BPF_CORE_READ(task, tgid);
  struct mm_struct* mm = BPF_CORE_READ(task, mm);
  if (!mm) return;
  __u64 start_code = BPF_CORE_READ(mm, start_code);
  bpf_find_vma(task, start_code, note_file, event, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fl_exec, struct task_struct* task, pid_t old_pid, struct linux_binprm* bprm) {
  /* On the stack: bpf_find_vma's callback context must be. */
  struct fl_exec_event event = {};
  fill(task, &event);
  event.cgroup_id = bpf_get_current_cgroup_id();
  if (bpf_ringbuf_output(&execs, &event, sizeof(event), 0) != 0) {
    __sync_fetch_and_add(&exec_dropped, 1);
  }
  return 0;
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
  bpf_seq_write(ctx->meta->seq, &event, sizeof(event));
  return 0;
}
