// Why: see uprobe_warmup.h. The site is a function of this binary that
// nothing calls, found through the loader's program headers; the program is
// two instructions loaded with a raw syscall, since libbpf's loader keeps
// process-wide state (feature probes) the main thread uses at the same time.
#include "probe/uprobe_warmup.h"

#include <link.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <system_error>
#include <thread>

#include "common/own_executable.h"
#include "common/unique_fd.h"
#include "probe/uprobe_multi.h"

// The warm-up probe's place: called by nothing.
extern "C" __attribute__((noinline, used)) void funclatency_uprobe_warmup_site() {
  __asm__ volatile("");
}

namespace funclatency {

namespace {

using State = UprobeWarmup::State;

struct WarmupSite {
  std::string path;  // the loaded object that holds funclatency_uprobe_warmup_site
  uint64_t offset = 0;
  bool found = false;
};

// Where funclatency_uprobe_warmup_site lies in its file: its address in the
// PT_LOAD segment that holds it, made a file offset.
int find_warmup_site(dl_phdr_info* info, size_t, void* data) {
  auto* site = static_cast<WarmupSite*>(data);
  const auto address = reinterpret_cast<uintptr_t>(&funclatency_uprobe_warmup_site);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type != PT_LOAD || address < start || address >= start + segment.p_memsz) {
      continue;
    }
    site->path = info->dlpi_name[0] ? info->dlpi_name : kOwnExecutableLink;
    site->offset = address - start + segment.p_offset;
    site->found = true;
    return 1;
  }
  return 0;
}

// A program that does nothing, for uprobe_multi links (BPF_TRACE_UPROBE_MULTI).
int load_empty_program() {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},                   // exit
  };
  static const char license[] = "GPL";
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.prog_type = BPF_PROG_TYPE_KPROBE;
  attr.insn_cnt = 2;
  attr.insns = reinterpret_cast<uintptr_t>(insns);
  attr.license = reinterpret_cast<uintptr_t>(license);
  attr.expected_attach_type = kAttachTypeUprobeMulti;
  std::memcpy(attr.prog_name, "fl_warmup", sizeof("fl_warmup"));
  return static_cast<int>(syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr)));
}

// The thread: makes the link (the wait: the same path and lock as the real
// links), says so, and closes it once released.
void warm_up(std::shared_ptr<std::atomic<State>> state) {
  WarmupSite site;
  dl_iterate_phdr(find_warmup_site, &site);
  const UniqueFd program(site.found ? load_empty_program() : -1);
  UniqueFd link;  // closed before the program
  if (program) {
    const uint64_t cookie = 0;
    auto created = create_uprobe_multi_link(program.get(), site.path, {&site.offset, 1},
                                            {&cookie, 1}, false, getpid());
    if (created) link.reset(*created);
  }
  State expected = State::kStarting;
  if (state->compare_exchange_strong(expected, State::kRegistered)) state->notify_all();
  state->wait(State::kRegistered);
}

}  // namespace

UprobeWarmup::UprobeWarmup() : state_(std::make_shared<std::atomic<State>>(State::kStarting)) {
  try {
    std::thread(warm_up, state_).detach();
  } catch (const std::system_error&) {
    state_->store(State::kReleased);
  }
}

UprobeWarmup::~UprobeWarmup() {
  release();
}

void UprobeWarmup::wait_registered() const {
  state_->wait(State::kStarting);
}

void UprobeWarmup::release() {
  state_->store(State::kReleased);
  state_->notify_all();
}

}  // namespace funclatency
