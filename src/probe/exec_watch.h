// Following programs into containers (--follow, --config): which processes
// start a program a target may follow, seen in the kernel at exec, and which
// run one already. Each comes with the file its code is mapped from, named
// as the kernel names it: the device and inode of the image layer's file, so
// the containers of one image share one name however many overlay mounts
// show it. The kernel sends a record only for an exec whose name is one the
// follower gave (set_names) and whose file it has not judged yet, everywhere
// or in the exec's mount namespace (know, know_in):
// every other exec on the host costs no record and no wake-up.
// RAII: the object, the tracepoint link and the ring go together; a process
// held at its exec (--follow-hold) is let go at the latest when the watch is.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/non_copyable.h"

struct exec_watch_bpf;
struct ring_buffer;
struct bpf_link;

namespace funclatency {

// A file as the kernel names it (s_dev, i_ino): what a uprobe attaches to.
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};

// A process that started a program, or ran one when the watch started.
struct ProgramStart {
  int pid = 0;
  std::optional<FileId> file;  // unknown when the kernel could not look (rare)
  uint64_t cgroup_id = 0;      // 0 for processes found running
  uint64_t mnt_ns = 0;         // its mount namespace's id (never reused while the host runs)
  bool held = false;           // stopped at its exec until release() (--follow-hold)
};

class ExecWatch : NonCopyable {
 public:
  // Loads the watch and attaches it to sched_process_exec: from here on,
  // every exec of a program named by set_names() is noted. With `hold` (not
  // zero), such an exec of a file not known() stops its process until
  // release(pid), or `hold` at most.
  static Result<std::unique_ptr<ExecWatch>> start(std::chrono::nanoseconds hold = {});
  ~ExecWatch();

  // Readable (epoll) while execs wait to be drained.
  int wait_fd() const;
  // The execs noted since the last call, oldest first.
  Result<std::vector<ProgramStart>> drain();
  // Every process running now (a BPF task iterator: one pass, no /proc walk).
  Result<std::vector<ProgramStart>> running() const;
  // The file process `pid` runs now, named as an exec record names it;
  // nothing when the process is gone or maps no file. An exec record can be
  // stale by the time it is read (the process exec'd again, or a forked
  // child still showed its parent's program to a scan), so the follower asks.
  Result<std::optional<FileId>> file_of(int pid) const;
  // Execs the ring had no room for since the start.
  uint64_t dropped() const;
  // Execs the kernel sent no record for (exec_watch.h: no name matched, or
  // every target knew the file) since the start.
  uint64_t skipped() const;

  // The names an exec of a followed program may go by (exec_watch.h says
  // which of an exec's names are compared): from now on these only.
  Result<void> set_names(const std::set<std::string>& names);
  // A file every target has attached: its execs need no record from now on.
  Result<void> know(const FileId& file);
  // A file every target has judged in mount namespace `mnt_ns` (a path is
  // resolved in its process's namespace: the file may be a target's program
  // by the path it has in another): its execs there need no record.
  Result<void> know_in(const FileId& file, uint64_t mnt_ns);
  // Every file known() so far is to be judged again (the targets changed).
  void forget_known();
  // Lets a held process go (it is not held, or gone: nothing happens).
  void release(int pid);
  // The BPF maps' locked kernel memory (memlock in fdinfo), in bytes.
  uint64_t locked_memory() const;

 private:
  ExecWatch() = default;
  // With --follow-hold: a process of its own that lets the held processes go
  // at their bound, this one alive or not (guard_held in exec_watch.cpp).
  Result<void> start_guard(std::chrono::nanoseconds hold);
  static int on_record(void* context, void* data, size_t size);
  // The task iterator's records: every process, or only `pid` (not 0).
  Result<std::vector<ProgramStart>> scan(int pid) const;

  // Destroyed in reverse: the ring, the link, then the object.
  std::unique_ptr<exec_watch_bpf, void (*)(exec_watch_bpf*)> skeleton_{nullptr, nullptr};
  std::unique_ptr<bpf_link, int (*)(bpf_link*)> link_{nullptr, nullptr};
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> ring_{nullptr, nullptr};
  std::vector<ProgramStart> drained_;
  std::set<std::string> names_;
  int guard_pipe_ = -1;  // its closing (our end) tells the guard we are gone
};

}  // namespace funclatency
