// The floor's loader: attaches bench/floor.bpf.c's empty entry and return
// programs at one file offset, the way funclatency attaches (a uprobe_multi
// link per probe kind, filtered to one process) or, with --perf, the way
// libbpf-tools and bpftrace do (a perf-event uprobe each). Prints "Tracing"
// on stderr once attached, like funclatency, and waits for SIGINT/SIGTERM or
// for the process to exit.
//
//   floor_loader [--perf] -p PID BINARY FILE_OFFSET
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "floor_bpf.skel.h"
#include "probe/uprobe_links.h"
#include "probe/uprobe_multi.h"

namespace funclatency {
namespace {

struct FloorOptions {
  bool perf_event = false;
  int pid = 0;
  std::string binary;
  uint64_t offset = 0;
};

using FloorSkeleton = std::unique_ptr<floor_bpf, decltype(&floor_bpf::destroy)>;

Result<FloorOptions> parse_options(int argc, char** argv) {
  FloorOptions options;
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc; i++) {
    std::string_view arg = argv[i];
    if (arg == "--perf") {
      options.perf_event = true;
    } else if (arg == "-p" && i + 1 < argc) {
      options.pid = std::atoi(argv[++i]);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2 || options.pid <= 0) {
    return bad_input("usage: floor_loader [--perf] -p PID BINARY FILE_OFFSET");
  }
  options.binary = positional[0];
  options.offset = std::strtoull(std::string(positional[1]).c_str(), nullptr, 0);
  return options;
}

Result<FloorSkeleton> load_floor(bool for_uprobe_multi) {
  FloorSkeleton skeleton(floor_bpf::open(), &floor_bpf::destroy);
  if (!skeleton) return runtime_error("open the floor BPF object", errno);
  if (for_uprobe_multi) {
    for (bpf_program* program : {skeleton->progs.floor_entry, skeleton->progs.floor_return}) {
      bpf_program__set_expected_attach_type(program,
                                            static_cast<bpf_attach_type>(kAttachTypeUprobeMulti));
    }
  }
  if (int rc = floor_bpf::load(skeleton.get()); rc < 0) {
    return runtime_error("load the floor BPF programs", errno_from(rc));
  }
  return skeleton;
}

Result<std::vector<ProbeLink>> attach_floor(const floor_bpf& skeleton,
                                            const FloorOptions& options) {
  std::vector<ProbeLink> links;
  const std::array<std::pair<bpf_program*, bool>, 2> probes{
      {{skeleton.progs.floor_entry, false}, {skeleton.progs.floor_return, true}}};
  for (const auto& [program, is_return] : probes) {
    if (!options.perf_event) {
      const uint64_t offsets[] = {options.offset};
      const uint64_t cookies[] = {0};
      auto fd = create_uprobe_multi_link(bpf_program__fd(program), options.binary, offsets, cookies,
                                         is_return, options.pid);
      if (!fd) return std::unexpected(fd.error());
      links.push_back(ProbeLink::from_fd(*fd));
      continue;
    }
    bpf_uprobe_opts opts{};
    opts.sz = sizeof(opts);
    opts.retprobe = is_return;
    bpf_link* link = bpf_program__attach_uprobe_opts(program, options.pid, options.binary.c_str(),
                                                     options.offset, &opts);
    if (!link) {
      return runtime_error(
          fmt::format("attach a perf-event uprobe to {} at 0x{:x}", options.binary, options.offset),
          errno);
    }
    links.push_back(ProbeLink::from_libbpf(link));
  }
  return links;
}

// Blocks until SIGINT/SIGTERM arrives or process `pid` exits.
Result<void> wait_for_end(int pid) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &stop_signals, nullptr) < 0) {
    return runtime_error("block SIGINT/SIGTERM", errno);
  }
  int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (signal_fd < 0) return runtime_error("create a signalfd", errno);
  int process_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (process_fd < 0) {
    ::close(signal_fd);
    return runtime_error(fmt::format("watch process {}", pid), errno);
  }
  pollfd fds[] = {{signal_fd, POLLIN, 0}, {process_fd, POLLIN, 0}};
  while (poll(fds, 2, -1) < 0 && errno == EINTR) {
  }
  ::close(process_fd);
  ::close(signal_fd);
  return {};
}

int run(int argc, char** argv) {
  auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "%s\n", options.error().message().c_str());
    return options.error().exit_code();
  }
  auto skeleton = load_floor(!options->perf_event);
  if (!skeleton) {
    std::fprintf(stderr, "floor_loader: %s\n", skeleton.error().message().c_str());
    return skeleton.error().exit_code();
  }
  auto links = attach_floor(**skeleton, *options);
  if (!links) {
    std::fprintf(stderr, "floor_loader: %s\n", links.error().message().c_str());
    return links.error().exit_code();
  }
  std::fprintf(stderr, "Tracing %s at 0x%llx (%s)\n", options->binary.c_str(),
               static_cast<unsigned long long>(options->offset),
               options->perf_event ? "perf-event uprobes" : "uprobe_multi links");
  if (auto ended = wait_for_end(options->pid); !ended) {
    std::fprintf(stderr, "floor_loader: %s\n", ended.error().message().c_str());
    return ended.error().exit_code();
  }
  return 0;
}

}  // namespace
}  // namespace funclatency

int main(int argc, char** argv) {
  return funclatency::run(argc, argv);
}
