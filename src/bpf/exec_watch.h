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
  __u64 mnt_ns;    /* its mount namespace's id (exec_known) */
};

/* dev and ino name the text's file; without it the process maps no file at
 * its code (the lookup was refused, e.g. its mm was busy). */
#define FL_EXEC_FILE_KNOWN 1u
/* The exec's program stopped the process (--follow-hold): it stays stopped
 * until user space releases it (fl_release) or its bound runs out. */
#define FL_EXEC_HELD 2u

/* Which execs are worth a record, decided in the kernel so that the execs
 * of every other program cost no record and no wake-up.
 *
 * `exec_names`: a name a followed program may be exec'd by, as the first
 * FL_EXEC_NAME_LEN - 1 bytes of a file name, NUL-padded (the kernel's comm is
 * as long). An exec is looked at when its comm (the last part of the path
 * the exec was asked for), its file's own name (after symlinks), or the
 * last part of its script's interpreter path is one of them. Names cut
 * short only let more execs through; user space still judges each exactly.
 *
 * `exec_known`: files (as fl_exec_event names them) every target has judged
 * already: their execs need no record. Whether a file is a target's program
 * depends on the path its process reaches it by (one file can be /app/x in a
 * container and build/x on the host), and paths are resolved in the
 * process's mount namespace: a file judged not a target's program is known
 * in that namespace only (mnt_ns), one every target attached in all of them
 * (FL_EVERY_MNT_NS). A namespace's id is never reused while the system runs
 * (its inode number can be). */
#define FL_EXEC_NAME_LEN 16
struct fl_exec_name {
  char name[FL_EXEC_NAME_LEN];
};

struct fl_file_key {
  __u64 dev;
  __u64 ino;
  __u64 mnt_ns; /* a mount namespace's id, or FL_EVERY_MNT_NS */
};
#define FL_EVERY_MNT_NS (~0ull)

/* fl_release's argument (a BPF_PROG_TYPE_SYSCALL program, run by user space):
 * the process to let go of. */
struct fl_release_args {
  __u32 tgid;
  __s32 result; /* set by the program: 0, or a negative errno */
};

#endif
