// Why: see exec_watch.h. Lifecycle as libbpf-tools': open, set the hold
// bound, load the skeleton, attach, poll the ring; the task iterator runs
// once per call.
#include "probe/exec_watch.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bpf/exec_watch.h"
#include "common/unique_fd.h"
#include "exec_watch_bpf.skel.h"
#include "probe/bpf_object.h"

namespace funclatency {

static_assert(sizeof(fl_exec_event) == 40, "fl_exec_event must match exec_watch.h");
static_assert(sizeof(fl_exec_name) == 16, "fl_exec_name must match exec_watch.h");
static_assert(sizeof(fl_file_key) == 24, "fl_file_key must match exec_watch.h");
static_assert(sizeof(fl_release_args) == 8, "fl_release_args must match exec_watch.h");

namespace {

ProgramStart program_start(const fl_exec_event& event) {
  ProgramStart start{
      .pid = static_cast<int>(event.tgid), .cgroup_id = event.cgroup_id, .mnt_ns = event.mnt_ns};
  if (event.flags & FL_EXEC_FILE_KNOWN) start.file = FileId{event.dev, event.ino};
  start.held = (event.flags & FL_EXEC_HELD) != 0;
  return start;
}

fl_exec_name name_key(const std::string& name) {
  fl_exec_name key{};
  std::memcpy(key.name, name.data(), std::min(name.size(), sizeof key.name - 1));
  return key;
}

// The keys of map `fd`, read before any is deleted.
template <typename Key>
std::vector<Key> keys_of(int fd) {
  std::vector<Key> keys;
  Key key{};
  const Key* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &key) == 0) {
    keys.push_back(key);
    previous = &keys.back();
  }
  return keys;
}

// How often the guard lets go of the processes held past their bound: the
// bound is kept to within this.
std::chrono::milliseconds guard_tick(std::chrono::nanoseconds hold) {
  const auto eighth = std::chrono::duration_cast<std::chrono::milliseconds>(hold / 8);
  return std::clamp(eighth, std::chrono::milliseconds(5), std::chrono::milliseconds(50));
}

// The guard process's whole life; async-signal-safe calls only (the parent
// may have threads). Every `tick` it runs fl_release_due (BPF_PROG_TEST_RUN),
// which continues each process held past its bound: from a process's
// context, where the kernel sends a signal (from a timer's callback it often
// refuses). Once the agent's end of `pipe_fd` closes (it exited, or died), it
// goes on until nothing is held, then exits. It holds only the two
// descriptors and no capability.
[[noreturn]] void guard_held(int pipe_fd, int program_fd, std::chrono::milliseconds tick) {
  const unsigned low = static_cast<unsigned>(std::min(pipe_fd, program_fd));
  const unsigned high = static_cast<unsigned>(std::max(pipe_fd, program_fd));
  if (low > 0) syscall(SYS_close_range, 0u, low - 1, 0u);
  if (high > low + 1) syscall(SYS_close_range, low + 1, high - 1, 0u);
  syscall(SYS_close_range, high + 1, ~0u, 0u);
  prctl(PR_SET_NAME, "fl-hold-guard", 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2]{};
  syscall(SYS_capset, &header, none);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, nullptr);
  bool agent_gone = false;
  for (;;) {
    if (!agent_gone) {
      pollfd agent{pipe_fd, POLLIN, 0};
      char byte;
      if (poll(&agent, 1, static_cast<int>(tick.count())) > 0 && read(pipe_fd, &byte, 1) == 0) {
        agent_gone = true;
      }
    } else {
      timespec nap{0, static_cast<long>(tick.count()) * 1000000L};
      nanosleep(&nap, nullptr);
    }
    union bpf_attr run;
    std::memset(&run, 0, sizeof run);
    run.test.prog_fd = static_cast<uint32_t>(program_fd);
    const long failed = syscall(__NR_bpf, BPF_PROG_TEST_RUN, &run, sizeof run);
    if (agent_gone && (failed != 0 || run.test.retval == 0)) _exit(0);
  }
}

}  // namespace

Result<std::unique_ptr<ExecWatch>> ExecWatch::start(std::chrono::nanoseconds hold) {
  std::unique_ptr<ExecWatch> watch(new ExecWatch());
  watch->skeleton_ = {exec_watch_bpf::open(), exec_watch_bpf::destroy};
  if (!watch->skeleton_) return runtime_error("open the exec watch", errno);
  watch->skeleton_->rodata->hold_ns = static_cast<uint64_t>(std::max(hold.count(), int64_t{0}));
  if (hold.count() <= 0) {
    // Nothing is ever held: the map is the smallest the kernel makes.
    bpf_program__set_autoload(watch->skeleton_->progs.fl_release, false);
    bpf_program__set_autoload(watch->skeleton_->progs.fl_release_due, false);
    bpf_map__set_max_entries(watch->skeleton_->maps.held, 1);
  }
  if (exec_watch_bpf::load(watch->skeleton_.get()) != 0) {
    return runtime_error("load the exec watch (tp_btf/sched_process_exec, iter/task)", errno,
                         "it needs a kernel with BTF, bpf_find_vma (5.17+) and CAP_BPF, "
                         "CAP_PERFMON and CAP_SYS_ADMIN; --follow-hold also "
                         "bpf_send_signal_task (6.13+)");
  }
  if (hold.count() > 0) {
    if (auto guard = watch->start_guard(hold); !guard) return std::unexpected(guard.error());
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

uint64_t ExecWatch::skipped() const {
  return __atomic_load_n(&skeleton_->bss->exec_skipped, __ATOMIC_RELAXED);
}

ExecWatch::~ExecWatch() {
  // No exec is held from here on; those held now go on at once.
  link_.reset();
  if (skeleton_ && bpf_program__fd(skeleton_->progs.fl_release) >= 0) {
    for (uint32_t pid : keys_of<uint32_t>(bpf_map__fd(skeleton_->maps.held))) {
      release(static_cast<int>(pid));
    }
  }
  if (guard_pipe_ >= 0) close(guard_pipe_);
}

Result<void> ExecWatch::start_guard(std::chrono::nanoseconds hold) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return runtime_error("create the hold guard's pipe", errno);
  const pid_t child = fork();
  if (child < 0) {
    const int error = errno;
    close(ends[0]);
    close(ends[1]);
    return runtime_error("start the hold guard process", error);
  }
  if (child == 0) {
    guard_held(ends[0], bpf_program__fd(skeleton_->progs.fl_release_due), guard_tick(hold));
  }
  close(ends[0]);
  guard_pipe_ = ends[1];
  return {};
}

Result<void> ExecWatch::set_names(const std::set<std::string>& names) {
  const int fd = bpf_map__fd(skeleton_->maps.exec_names);
  std::set<std::string> keys;
  for (const auto& name : names) {
    if (name.empty()) continue;
    keys.insert(std::string(name, 0, FL_EXEC_NAME_LEN - 1));
  }
  const uint8_t yes = 1;
  for (const auto& name : keys) {
    if (names_.contains(name)) continue;
    const fl_exec_name key = name_key(name);
    if (bpf_map_update_elem(fd, &key, &yes, BPF_ANY) != 0) {
      return runtime_error("add the name " + name + " to the exec watch", errno);
    }
  }
  for (const auto& name : names_) {
    if (keys.contains(name)) continue;
    const fl_exec_name key = name_key(name);
    bpf_map_delete_elem(fd, &key);
  }
  names_ = std::move(keys);
  return {};
}

Result<void> ExecWatch::know(const FileId& file) {
  return know_in(file, FL_EVERY_MNT_NS);
}

Result<void> ExecWatch::know_in(const FileId& file, uint64_t mnt_ns) {
  const fl_file_key key{.dev = file.dev, .ino = file.ino, .mnt_ns = mnt_ns};
  const uint8_t yes = 1;
  if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.exec_known), &key, &yes, BPF_ANY) != 0) {
    return runtime_error("note a judged file in the exec watch", errno);
  }
  return {};
}

void ExecWatch::forget_known() {
  const int fd = bpf_map__fd(skeleton_->maps.exec_known);
  for (const auto& key : keys_of<fl_file_key>(fd)) bpf_map_delete_elem(fd, &key);
}

void ExecWatch::release(int pid) {
  const int program = bpf_program__fd(skeleton_->progs.fl_release);
  if (program < 0) return;
  fl_release_args args{.tgid = static_cast<uint32_t>(pid), .result = 0};
  LIBBPF_OPTS(bpf_test_run_opts, run, .ctx_in = &args, .ctx_size_in = sizeof args);
  bpf_prog_test_run_opts(program, &run);
}

uint64_t ExecWatch::locked_memory() const {
  return locked_memory_of(skeleton_->obj);
}

}  // namespace funclatency
