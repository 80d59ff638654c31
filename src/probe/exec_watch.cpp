// Why: see exec_watch.h. Lifecycle as libbpf-tools': open and load the
// skeleton, attach, poll the ring; the task iterator runs once per call.
#include "probe/exec_watch.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bpf/exec_watch.h"
#include "common/unique_fd.h"
#include "exec_watch_bpf.skel.h"

namespace funclatency {

static_assert(sizeof(fl_exec_event) == 32, "fl_exec_event must match exec_watch.h");

namespace {

ProgramStart program_start(const fl_exec_event& event) {
  ProgramStart start{.pid = static_cast<int>(event.tgid), .cgroup_id = event.cgroup_id};
  if (event.flags & FL_EXEC_FILE_KNOWN) start.file = FileId{event.dev, event.ino};
  return start;
}

}  // namespace

Result<std::unique_ptr<ExecWatch>> ExecWatch::start() {
  std::unique_ptr<ExecWatch> watch(new ExecWatch());
  watch->skeleton_ = {exec_watch_bpf::open_and_load(), exec_watch_bpf::destroy};
  if (!watch->skeleton_) {
    return runtime_error("load the exec watch (tp_btf/sched_process_exec, iter/task)", errno,
                         "it needs a kernel with BTF, bpf_find_vma (5.17+) and CAP_BPF, "
                         "CAP_PERFMON and CAP_SYS_ADMIN");
  }
  watch->link_ = {bpf_program__attach(watch->skeleton_->progs.fl_exec), bpf_link__destroy};
  if (!watch->link_) {
    return runtime_error("attach the exec watch to sched_process_exec", errno);
  }
  watch->ring_ = {
      ring_buffer__new(bpf_map__fd(watch->skeleton_->maps.execs), on_record, watch.get(), nullptr),
      ring_buffer__free};
  if (!watch->ring_) return runtime_error("open the exec watch's ring buffer", errno);
  return watch;
}

int ExecWatch::wait_fd() const {
  return ring_buffer__epoll_fd(ring_.get());
}

int ExecWatch::on_record(void* context, void* data, size_t size) {
  if (size < sizeof(fl_exec_event)) return 0;
  fl_exec_event event;
  std::memcpy(&event, data, sizeof event);
  static_cast<ExecWatch*>(context)->drained_.push_back(program_start(event));
  return 0;
}

Result<std::vector<ProgramStart>> ExecWatch::drain() {
  drained_.clear();
  const int consumed = ring_buffer__consume(ring_.get());
  if (consumed < 0) return runtime_error("read the exec watch's ring buffer", -consumed);
  return std::move(drained_);
}

Result<std::vector<ProgramStart>> ExecWatch::running() const {
  return scan(0);
}

Result<std::optional<FileId>> ExecWatch::file_of(int pid) const {
  auto found = scan(pid);
  if (!found) return std::unexpected(found.error());
  if (found->empty()) return std::optional<FileId>();
  return found->front().file;
}

Result<std::vector<ProgramStart>> ExecWatch::scan(int pid) const {
  union bpf_iter_link_info one {};
  one.task.pid = static_cast<__u32>(pid);
  bpf_iter_attach_opts options{};
  options.sz = sizeof options;
  options.link_info = &one;
  options.link_info_len = sizeof one;
  std::unique_ptr<bpf_link, int (*)(bpf_link*)> iterator{
      bpf_program__attach_iter(skeleton_->progs.fl_scan, pid ? &options : nullptr),
      bpf_link__destroy};
  // The kernel refuses an iterator over a process that is gone.
  if (!iterator && pid && (errno == ENOENT || errno == ESRCH)) return std::vector<ProgramStart>();
  if (!iterator) return runtime_error("start the task iterator", errno);
  UniqueFd records(bpf_iter_create(bpf_link__fd(iterator.get())));
  if (!records) return runtime_error("open the task iterator", errno);
  std::vector<ProgramStart> found;
  fl_exec_event event;
  size_t filled = 0;
  for (;;) {
    const ssize_t n =
        read(records.get(), reinterpret_cast<char*>(&event) + filled, sizeof event - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return runtime_error("read the task iterator", errno);
    if (n == 0) return found;
    filled += static_cast<size_t>(n);
    if (filled == sizeof event) {
      found.push_back(program_start(event));
      filled = 0;
    }
  }
}

uint64_t ExecWatch::dropped() const {
  return skeleton_->bss->exec_dropped;
}

}  // namespace funclatency
