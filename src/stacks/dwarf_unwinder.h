// Walks a copied user stack the way perf --call-graph dwarf does: elfutils'
// libdwfl reads the .eh_frame (or .debug_frame) CFI of the files a process
// maps, and falls back to the frame-pointer chain for code without CFI (Go).
// Memory is read only from the copy. One per process: libdwfl keeps the files
// and their parsed CFI between walks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/non_copyable.h"

namespace funclatency {

// The registers a walk starts from: those the probes copy (fl_user_regs,
// filled by whoever reads the records), the only ones a walk can know. A
// plain aggregate, as the record's is: value-initialize it (`regs{}`).
struct UserRegisters {
  uint64_t ip;
  uint64_t sp;
  uint64_t bp;
  uint64_t bx;
  uint64_t r12;
  uint64_t r13;
  uint64_t r14;
  uint64_t r15;
};

// A copy of a process's memory: bytes[i] was at address base + i.
struct MemoryWindow {
  uint64_t base = 0;
  std::span<const uint8_t> bytes;

  // The 8 bytes at `address`, when the window holds all of them.
  bool read(uint64_t address, uint64_t& value) const;
};

class DwarfUnwinder : NonCopyable {
 public:
  // What a walk finds: one per frame, innermost first. `activation`: pc is
  // where the frame stands (the first frame, or one a signal interrupted),
  // not a return address (whose call instruction is at pc - 1). Return false
  // to stop.
  using FrameVisitor = std::function<bool(uint64_t pc, bool activation)>;

  explicit DwarfUnwinder(int pid);
  ~DwarfUnwinder();

  // Places the ELF file `openable` (the path we open it by) at load bias
  // `bias` (runtime address minus ELF address), named `name`. False when
  // libdwfl cannot read it (or it overlaps a file already placed).
  bool add_module(const std::string& name, const std::string& openable, uint64_t bias);

  // Visits the frame `regs` describe (only ip, sp, bp, bx, r12-r15 are known)
  // and those that called it, until the visitor says stop, a frame cannot be
  // unwound (no CFI and no frame pointer, memory outside `stack`), or
  // `max_frames` were visited. With no file placed, visits only the first.
  void walk(const UserRegisters& regs, const MemoryWindow& stack, size_t max_frames,
            const FrameVisitor& visit);

  struct State;  // libdwfl's handle and the walk under way (the callbacks' argument)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace funclatency
