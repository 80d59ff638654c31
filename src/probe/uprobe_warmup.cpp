// Why: see uprobe_warmup.h. The site is a function of this binary that
// nothing calls, found from its address (own_code.h: the package strips the
// binary); the program is two instructions loaded with a raw syscall, since
// libbpf's loader keeps process-wide state (feature probes) the main thread
// uses at the same time.
#include "probe/uprobe_warmup.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <system_error>
#include <thread>

#include "common/unique_fd.h"
#include "probe/own_code.h"
#include "probe/uprobe_multi.h"

// The warm-up probe's place: called by nothing.
extern "C" __attribute__((noinline, used)) void funclatency_uprobe_warmup_site() {
  __asm__ volatile("");
}

namespace funclatency {

namespace {

using State = UprobeWarmup::State;

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
  auto site = locate_own_code(reinterpret_cast<const void*>(&funclatency_uprobe_warmup_site));
  const UniqueFd program(site ? load_empty_program() : -1);
  UniqueFd link;  // closed before the program
  if (program) {
    const uint64_t cookie = 0;
    auto created = create_uprobe_multi_link(program.get(), site->path, {&site->file_offset, 1},
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
