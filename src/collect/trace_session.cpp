#include "collect/trace_session.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "collect/event_reader.h"
#include "collect/map_reader.h"

namespace funclatency {

namespace {

using Clock = std::chrono::steady_clock;

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

enum EpollTag : uint64_t { kSignalTag = 1, kProcessTag = 2, kRingTag = 3 };

Result<void> watch(int epoll_fd, int fd, EpollTag tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) < 0) {
    return runtime_error("watch a file descriptor with epoll", errno);
  }
  return {};
}

}  // namespace

TraceSession::TraceSession(BpfObject& object, Aggregator& aggregator, std::vector<Sink*> sinks,
                           SessionOptions options, int signal_fd, std::function<void()> detach)
    : object_(object),
      aggregator_(aggregator),
      sinks_(std::move(sinks)),
      options_(std::move(options)),
      signal_fd_(signal_fd),
      detach_(std::move(detach)),
      num_functions_(object.num_functions()),
      ever_kernel_(num_functions_, options_.mode == ModeChoice::kKernel),
      last_totals_(num_functions_),
      last_lost_(num_functions_),
      window_calls_(num_functions_, 0),
      window_ringbuf_lost_(num_functions_, 0) {
  if (options_.mode == ModeChoice::kAuto) {
    policy_ = std::make_unique<ModePolicy>(num_functions_, options_.policy);
  }
  if (options_.mode == ModeChoice::kKernel) {
    for (uint32_t fn = 0; fn < num_functions_; fn++) aggregator_.set_mode_name(fn, "kernel");
  }
}

Result<void> TraceSession::collect_kernel_side() {
  MapReader reader(object_.fn_stats_fd(), object_.fn_lost_fd(), num_functions_);
  auto lost = reader.read_all_lost();
  if (!lost) return std::unexpected(lost.error());
  for (uint32_t fn = 0; fn < num_functions_; fn++) {
    const LostCounts& now = (*lost)[fn];
    LostCounts delta{now.unreturned - last_lost_[fn].unreturned, now.depth - last_lost_[fn].depth,
                     now.ringbuf - last_lost_[fn].ringbuf};
    window_ringbuf_lost_[fn] += delta.ringbuf;
    if (delta.total()) aggregator_.on_lost(fn, delta);
    last_lost_[fn] = now;
  }
  return reader.read_totals(ever_kernel_, [&](uint32_t fn, const KernelTotals& totals) {
    if (!last_totals_[fn]) last_totals_[fn] = std::make_unique<KernelTotals>();
    window_calls_[fn] += totals.count - last_totals_[fn]->count;
    aggregator_.on_kernel_totals(fn, *last_totals_[fn], totals);
    *last_totals_[fn] = totals;
  });
}

void TraceSession::apply_policy(double seconds) {
  if (!policy_) return;
  auto switches = policy_->observe(window_calls_, window_ringbuf_lost_, seconds);
  std::fill(window_calls_.begin(), window_calls_.end(), 0);
  std::fill(window_ringbuf_lost_.begin(), window_ringbuf_lost_.end(), 0);
  for (const auto& change : switches) {
    uint32_t mode = change.to_kernel ? FL_MODE_KERNEL : FL_MODE_EVENTS;
    if (auto set = object_.set_mode(change.fn_id, mode); !set) {
      if (options_.verbose) options_.verbose(set.error().message());
      continue;
    }
    if (change.to_kernel) ever_kernel_[change.fn_id] = true;
    const char* name = change.to_kernel ? "kernel" : "events";
    aggregator_.set_mode_name(change.fn_id, name);
    if (options_.verbose) {
      options_.verbose(
          fmt::format("function {} -> {} mode ({})", change.fn_id, name, change.reason));
    }
  }
}

void TraceSession::emit(Report::Kind kind) {
  Report report =
      aggregator_.take_report(Report::Kind::kInterval, std::chrono::system_clock::now());
  for (Sink* sink : sinks_) sink->write(report);
  if (kind == Report::Kind::kTotal) {
    report.kind = Report::Kind::kTotal;
    for (Sink* sink : sinks_) sink->write(report);
  }
}

bool TraceSession::any_sink_broken() const {
  return std::any_of(sinks_.begin(), sinks_.end(), [](Sink* s) { return s->broken(); });
}

Result<StopReason> TraceSession::run() {
  auto reader = EventReader::create(object_.events_fd(), [this](uint32_t fn, uint64_t ns) {
    aggregator_.on_event(fn, ns);
    if (fn < num_functions_) window_calls_[fn]++;
  });
  if (!reader) return std::unexpected(reader.error());

  FileDescriptor epoll(epoll_create1(EPOLL_CLOEXEC));
  if (epoll.get() < 0) return runtime_error("create an epoll instance", errno);
  if (auto ok = watch(epoll.get(), signal_fd_, kSignalTag); !ok) return std::unexpected(ok.error());
  if (auto ok = watch(epoll.get(), (*reader)->epoll_fd(), kRingTag); !ok) {
    return std::unexpected(ok.error());
  }
  FileDescriptor pidfd;
  if (options_.pid) {
    pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, *options_.pid, 0)));
    if (pidfd.get() < 0) {
      return bad_input(fmt::format("watch process {}", *options_.pid), "is the PID right?", errno);
    }
    if (auto ok = watch(epoll.get(), pidfd.get(), kProcessTag); !ok) {
      return std::unexpected(ok.error());
    }
  }

  const auto start = Clock::now();
  const auto policy_period = std::chrono::milliseconds(250);
  auto next_policy = start + policy_period;
  auto last_policy = start;
  auto next_live = start + options_.live_period;
  auto next_late_attach = start;
  std::optional<Clock::time_point> next_interval;
  if (options_.interval.count() > 0) next_interval = start + options_.interval;
  std::optional<Clock::time_point> deadline;
  if (options_.duration) deadline = start + *options_.duration;

  StopReason reason = StopReason::kSignal;
  bool running = true;
  while (running) {
    auto now = Clock::now();
    auto wake = now + options_.poll_period;
    if (!options_.live_sinks.empty()) wake = std::min(wake, next_live);
    if (next_interval) wake = std::min(wake, *next_interval);
    if (deadline) wake = std::min(wake, *deadline);
    auto timeout_ms =
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration{0}));
    epoll_event events[4];
    int ready = epoll_wait(epoll.get(), events, 4, static_cast<int>(timeout_ms.count()));
    if (ready < 0 && errno != EINTR) return runtime_error("wait for events", errno);
    for (int i = 0; i < std::max(ready, 0); i++) {
      if (events[i].data.u64 == kSignalTag) {
        signalfd_siginfo info;
        if (::read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
          if (options_.verbose)
            options_.verbose(fmt::format("signal {}: stopping", info.ssi_signo));
        }
        reason = StopReason::kSignal;
        running = false;
      } else if (events[i].data.u64 == kProcessTag) {
        if (options_.verbose) options_.verbose(fmt::format("process {} exited", *options_.pid));
        reason = StopReason::kProcessExited;
        running = false;
      }
    }
    if (auto drained = (*reader)->drain(); !drained) return std::unexpected(drained.error());
    now = Clock::now();
    if (running && options_.attach_late && now >= next_late_attach) {
      auto added = options_.attach_late();
      if (!added) return std::unexpected(added.error());
      for (uint32_t fn : *added) {
        if (fn >= num_functions_) continue;
        if (options_.mode == ModeChoice::kKernel) {
          ever_kernel_[fn] = true;
          aggregator_.set_mode_name(fn, "kernel");
        }
      }
      next_late_attach = now + options_.late_attach_period;
    }
    if (policy_ && now >= next_policy) {
      if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
      apply_policy(std::chrono::duration<double>(now - last_policy).count());
      last_policy = now;
      next_policy = now + policy_period;
    }
    if (running && !options_.live_sinks.empty() && now >= next_live) {
      if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
      Report live = aggregator_.peek_report(std::chrono::system_clock::now());
      for (Sink* sink : options_.live_sinks) sink->write(live);
      next_live = now + options_.live_period;
    }
    if (running && next_interval && now >= *next_interval) {
      if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
      emit(Report::Kind::kInterval);
      *next_interval += options_.interval;
      if (*next_interval <= now) next_interval = now + options_.interval;
    }
    if (running && deadline && now >= *deadline) {
      reason = StopReason::kDuration;
      running = false;
    }
    if (running && any_sink_broken()) {
      reason = StopReason::kSinkBroken;
      running = false;
    }
  }

  // Detach first so no call completes after the final read.
  if (detach_) detach_();
  if (auto drained = (*reader)->drain(); !drained) return std::unexpected(drained.error());
  if (auto ok = collect_kernel_side(); !ok) return std::unexpected(ok.error());
  if (!any_sink_broken()) emit(Report::Kind::kTotal);
  for (Sink* sink : sinks_) sink->close();
  return reason;
}

}  // namespace funclatency
