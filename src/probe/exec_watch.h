// Following programs into containers (--follow, --config): which processes
// start a program, seen in the kernel at exec, and which run one already.
// Each comes with the file its code is mapped from, named as the kernel
// names it: the device and inode of the image layer's file, so the
// containers of one image share one name however many overlay mounts show
// it. RAII: the object, the tracepoint link and the ring go together.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/error.h"

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
};

class ExecWatch {
 public:
  // Loads the watch and attaches it to sched_process_exec: from here on,
  // every exec on the host is noted.
  static Result<std::unique_ptr<ExecWatch>> start();
  ~ExecWatch() = default;
  ExecWatch(const ExecWatch&) = delete;
  ExecWatch& operator=(const ExecWatch&) = delete;

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

 private:
  ExecWatch() = default;
  static int on_record(void* context, void* data, size_t size);
  // The task iterator's records: every process, or only `pid` (not 0).
  Result<std::vector<ProgramStart>> scan(int pid) const;

  // Destroyed in reverse: the ring, the link, then the object.
  std::unique_ptr<exec_watch_bpf, void (*)(exec_watch_bpf*)> skeleton_{nullptr, nullptr};
  std::unique_ptr<bpf_link, int (*)(bpf_link*)> link_{nullptr, nullptr};
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> ring_{nullptr, nullptr};
  std::vector<ProgramStart> drained_;
};

}  // namespace funclatency
