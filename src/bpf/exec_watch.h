/* The ABI between exec_watch.bpf.c and the C++ side (probe/exec_watch.cpp):
 * which file a process runs, as the kernel knows it. Plain fixed-width
 * structs; C++ static_asserts the size.
 *
 * A container's program is a file under an overlay mount: every container
 * of an image shows it at its own overlay inode, while the text the process
 * maps (and a uprobe attaches to) is the one file of the image layer below.
 * So a file is named by the mapping of its text, never by a path or stat(). */
#ifndef FUNCLATENCY_EXEC_WATCH_ABI_H
#define FUNCLATENCY_EXEC_WATCH_ABI_H
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* A process that has just exec'd (the exec ring), or one that ran when the
 * watch started (the task iterator's records). */
struct fl_exec_event {
  __u32 tgid;
  __u32 flags;     /* FL_EXEC_* */
  __u64 dev;       /* the kernel's s_dev of the text's file system (major << 20 | minor) */
  __u64 ino;       /* the text's inode number */
  __u64 cgroup_id; /* cgroup v2 id of the process (0 from the iterator) */
};

/* dev and ino name the text's file; without it the process maps no file at
 * its code (the lookup was refused, e.g. its mm was busy). */
#define FL_EXEC_FILE_KNOWN 1u

#endif
