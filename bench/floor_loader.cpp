// The floor's loader: attaches bench/floor.bpf.c's empty entry and return
// programs at one file offset, the way funclatency attaches (a uprobe_multi
// link per probe kind, filtered to one process) or, with --perf, the way
// libbpf-tools and bpftrace do (a perf-event uprobe each). With
// --ret-offsets, calls end the way funclatency ends them in Go code: no
// return probe, the empty floor_ret_insn as a plain uprobe on each of those
// offsets (the function's `ret` instructions; one uprobe_multi link for all).
// Prints "Tracing" on stderr once attached, like funclatency, and waits for
// SIGINT/SIGTERM or for the process to exit. With --clock the entry and
// return programs read the clock and nothing else (the floor of a timed call).
//
//   floor_loader [--perf] [--clock] [--ret-offsets OFF,OFF...] -p PID BINARY FILE_OFFSET
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

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
  bool clock = false;  // clock_entry/return: a clock read each
  int pid = 0;
  std::string binary;
  uint64_t offset = 0;
  std::vector<uint64_t> ret_offsets;  // empty: a return probe at `offset`
};

using FloorSkeleton = std::unique_ptr<floor_bpf, decltype(&floor_bpf::destroy)>;

constexpr std::string_view kUsage =
    "usage: floor_loader [--perf] [--clock] [--ret-offsets OFF,OFF...] -p PID BINARY "
    "FILE_OFFSET";

// "0x1f,0x2a" -> {0x1f, 0x2a}; nothing on an empty or malformed list.
std::vector<uint64_t> parse_offsets(std::string_view list) {
  std::vector<uint64_t> offsets;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string item(list.substr(0, comma));
    char* end = nullptr;
    const uint64_t offset = std::strtoull(item.c_str(), &end, 0);
    if (item.empty() || *end != '\0') return {};
    offsets.push_back(offset);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return offsets;
}

Result<FloorOptions> parse_options(int argc, char** argv) {
  FloorOptions options;
  bool ret_offsets_given = false;
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc; i++) {
    std::string_view arg = argv[i];
    if (arg == "--perf") {
      options.perf_event = true;
    } else if (arg == "--clock") {
      options.clock = true;
    } else if (arg == "--ret-offsets" && i + 1 < argc) {
      options.ret_offsets = parse_offsets(argv[++i]);
      ret_offsets_given = true;
    } else if (arg == "-p" && i + 1 < argc) {
      options.pid = std::atoi(argv[++i]);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2 || options.pid <= 0 ||
      (ret_offsets_given && options.ret_offsets.empty())) {
    return bad_input(std::string(kUsage));
  }
  options.binary = positional[0];
  options.offset = std::strtoull(std::string(positional[1]).c_str(), nullptr, 0);
  return options;
}

Result<FloorSkeleton> load_floor(bool for_uprobe_multi) {
  FloorSkeleton skeleton(floor_bpf::open(), &floor_bpf::destroy);
  if (!skeleton) return runtime_error("open the floor BPF object", errno);
  if (for_uprobe_multi) {
    for (bpf_program* program :
         {skeleton->progs.floor_entry, skeleton->progs.floor_return, skeleton->progs.floor_ret_insn,
          skeleton->progs.clock_entry, skeleton->progs.clock_return}) {
      bpf_program__set_expected_attach_type(program,
                                            static_cast<bpf_attach_type>(kAttachTypeUprobeMulti));
    }
  }
  if (int rc = floor_bpf::load(skeleton.get()); rc < 0) {
    return runtime_error("load the floor BPF programs", errno_from(rc));
  }
  return skeleton;
}

// One probe kind: a program, where it goes, and whether as a return probe.
struct FloorProbe {
  bpf_program* program;
  std::vector<uint64_t> offsets;
  bool is_return;
};

Result<std::vector<ProbeLink>> attach_floor(const floor_bpf& skeleton,
                                            const FloorOptions& options) {
  std::vector<FloorProbe> probes{
      {options.clock ? skeleton.progs.clock_entry : skeleton.progs.floor_entry,
       {options.offset},
       false}};
  if (options.ret_offsets.empty()) {
    probes.push_back({options.clock ? skeleton.progs.clock_return : skeleton.progs.floor_return,
                      {options.offset},
                      true});
  } else {
    probes.push_back({skeleton.progs.floor_ret_insn, options.ret_offsets, false});
  }
  std::vector<ProbeLink> links;
  for (const FloorProbe& probe : probes) {
    if (!options.perf_event) {
      const std::vector<uint64_t> cookies(probe.offsets.size(), 0);
      auto fd = create_uprobe_multi_link(bpf_program__fd(probe.program), options.binary,
                                         probe.offsets, cookies, probe.is_return, options.pid);
      if (!fd) return std::unexpected(fd.error());
      links.push_back(ProbeLink::from_fd(*fd));
      continue;
    }
    for (uint64_t offset : probe.offsets) {
      bpf_uprobe_opts opts{};
      opts.sz = sizeof(opts);
      opts.retprobe = probe.is_return;
      bpf_link* link = bpf_program__attach_uprobe_opts(probe.program, options.pid,
                                                       options.binary.c_str(), offset, &opts);
      if (!link) {
        return runtime_error(
            fmt::format("attach a perf-event uprobe to {} at 0x{:x}", options.binary, offset),
            errno);
      }
      links.push_back(ProbeLink::from_libbpf(link));
    }
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
  std::string exits = "a return probe";
  if (!options->ret_offsets.empty()) {
    exits = fmt::format("{} ret-instruction probe(s) at", options->ret_offsets.size());
    for (uint64_t offset : options->ret_offsets) exits += fmt::format(" 0x{:x}", offset);
  }
  std::fprintf(stderr, "Tracing %s at 0x%llx, %s (%s)\n", options->binary.c_str(),
               static_cast<unsigned long long>(options->offset), exits.c_str(),
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
