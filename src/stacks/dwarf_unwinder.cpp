// libdwfl driven over a copied stack (see dwarf_unwinder.h). libdwfl calls
// back for the initial registers and every memory read; the walk under way
// is in State, which libdwfl gets as its callbacks' argument.
#include "stacks/dwarf_unwinder.h"

#include <elfutils/libdwfl.h>

#include <cstring>
#include <utility>

namespace funclatency {

namespace {

// DWARF register numbers of x86-64 (System V psABI, figure 3.36).
constexpr int kDwarfRbx = 3;
constexpr int kDwarfRbp = 6;
constexpr int kDwarfRsp = 7;
constexpr int kDwarfR12 = 12;

// Never looks for separate debug files: the CFI a walk needs is in the
// mapped files (.eh_frame, or .debug_frame where it was kept), and a
// debuginfod lookup has no place on the collector's thread.
int no_debuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                 char**) {
  return -1;
}

const Dwfl_Callbacks kDwflCallbacks = {
    .find_elf = nullptr,
    .find_debuginfo = no_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

}  // namespace

bool MemoryWindow::read(uint64_t address, uint64_t& value) const {
  if (address < base || address - base > bytes.size() || bytes.size() - (address - base) < 8) {
    return false;
  }
  std::memcpy(&value, bytes.data() + (address - base), sizeof value);
  return true;
}

struct DwarfUnwinder::State {
  int pid = 0;
  Dwfl* dwfl = nullptr;
  bool attached = false;
  size_t modules = 0;
  // The walk under way.
  const UserRegisters* regs = nullptr;
  const MemoryWindow* stack = nullptr;

  static pid_t next_thread(Dwfl*, void* arg, void** thread_arg) {
    // One thread: the one whose stack was copied, reported once.
    if (*thread_arg != nullptr) return 0;
    *thread_arg = arg;
    return static_cast<State*>(arg)->pid;
  }
  static bool get_thread(Dwfl*, pid_t, void* arg, void** thread_arg) {
    *thread_arg = arg;
    return true;
  }
  static bool memory_read(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* arg) {
    const State& state = *static_cast<State*>(arg);
    uint64_t value = 0;
    if (state.stack == nullptr || !state.stack->read(address, value)) return false;
    *result = value;
    return true;
  }
  static bool set_initial_registers(Dwfl_Thread* thread, void* arg) {
    const UserRegisters& regs = *static_cast<State*>(arg)->regs;
    // Only what the probe saved: the other registers stay unknown, so CFI
    // that needs them ends the walk instead of using made-up values.
    const Dwarf_Word rbx = regs.bx;
    const Dwarf_Word rbp_rsp[] = {regs.bp, regs.sp};
    const Dwarf_Word r12_r15[] = {regs.r12, regs.r13, regs.r14, regs.r15};
    if (!dwfl_thread_state_registers(thread, kDwarfRbx, 1, &rbx) ||
        !dwfl_thread_state_registers(thread, kDwarfRbp, 2, rbp_rsp) ||
        !dwfl_thread_state_registers(thread, kDwarfR12, 4, r12_r15)) {
      return false;
    }
    dwfl_thread_state_register_pc(thread, regs.ip);
    return true;
  }

  static constexpr Dwfl_Thread_Callbacks kThreadCallbacks = {
      .next_thread = next_thread,
      .get_thread = get_thread,
      .memory_read = memory_read,
      .set_initial_registers = set_initial_registers,
      .detach = nullptr,
      .thread_detach = nullptr,
  };
};

DwarfUnwinder::DwarfUnwinder(int pid) : state_(std::make_unique<State>()) {
  state_->pid = pid > 0 ? pid : 1;
  state_->dwfl = dwfl_begin(&kDwflCallbacks);
}

DwarfUnwinder::~DwarfUnwinder() {
  if (state_->dwfl != nullptr) dwfl_end(state_->dwfl);
}

bool DwarfUnwinder::add_module(const std::string& name, const std::string& openable,
                               uint64_t bias) {
  if (state_->dwfl == nullptr) return false;
  dwfl_report_begin_add(state_->dwfl);
  // add_p_vaddr: `bias` is added to the ELF's own addresses (ET_EXEC files
  // are placed at those addresses whatever the bias).
  Dwfl_Module* module = dwfl_report_elf(state_->dwfl, name.c_str(), openable.c_str(), -1,
                                        static_cast<GElf_Addr>(bias), true);
  dwfl_report_end(state_->dwfl, nullptr, nullptr);
  if (module == nullptr) return false;
  ++state_->modules;
  return true;
}

namespace {

struct Walk {
  const DwarfUnwinder::FrameVisitor* visit = nullptr;
  size_t max_frames = 0;
  size_t visited = 0;
  bool have_sp = false;
  uint64_t last_sp = 0;
};

int visit_frame(Dwfl_Frame* frame, void* arg) {
  Walk& walk = *static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
  Dwarf_Word sp = 0;
  const bool have_sp = dwfl_frame_reg(frame, kDwarfRsp, &sp) == 0;
  // Each caller's frame lies above its callee's: a walk that does not move
  // up the stack is going round in circles (or through garbage).
  if (walk.visited > 0 && have_sp && walk.have_sp && sp <= walk.last_sp) return DWARF_CB_ABORT;
  walk.have_sp = have_sp;
  walk.last_sp = sp;
  ++walk.visited;
  if (!(*walk.visit)(pc, activation)) return DWARF_CB_ABORT;
  return walk.visited < walk.max_frames ? DWARF_CB_OK : DWARF_CB_ABORT;
}

}  // namespace

void DwarfUnwinder::walk(const UserRegisters& regs, const MemoryWindow& stack, size_t max_frames,
                         const FrameVisitor& visit) {
  if (max_frames == 0) return;
  State& state = *state_;
  if (state.dwfl == nullptr || state.modules == 0) {
    visit(regs.ip, true);
    return;
  }
  // libdwfl learns the architecture from a placed file, so attaching waits
  // for the first one.
  if (!state.attached) {
    state.attached =
        dwfl_attach_state(state.dwfl, nullptr, state.pid, &State::kThreadCallbacks, &state);
    if (!state.attached) {
      visit(regs.ip, true);
      return;
    }
  }
  state.regs = &regs;
  state.stack = &stack;
  Walk walk{&visit, max_frames};
  // The end of the copy, of the CFI, or of the frame-pointer chain ends the
  // walk with an error: what was visited until then is the answer.
  dwfl_getthread_frames(state.dwfl, state.pid, visit_frame, &walk);
  state.regs = nullptr;
  state.stack = nullptr;
  if (walk.visited == 0) visit(regs.ip, true);
}

}  // namespace funclatency
