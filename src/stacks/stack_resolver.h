// Turns the user stack a slow call's record copied (registers and up to
// FL_STACK_BYTES from the stack pointer, see fl_slow_call in bpf/funclatency.h)
// into named frames: unwound with the binaries' CFI through libdw (frame
// pointers where there is none, as in Go), named with the project's own ELF
// and Go readers. Keeps per-process state (memory map, unwinder) and
// per-file symbol tables between calls. A process is taken in when it is
// first seen (see_process: its map read, the files of its code opened), so
// that its stacks can still be named after it exits; forget_exited drops
// the state of processes gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/non_copyable.h"
#include "model/report.h"
#include "stacks/dwarf_unwinder.h"
#include "symbols/search_paths.h"

namespace funclatency {

class BinarySymbols;
struct MemoryMapping;

struct StackSample {
  int pid = 0;
  int tid = 0;
  UserRegisters regs{};            // from the record
  std::span<const uint8_t> stack;  // copy of the process's memory [regs.sp, regs.sp + size)
  bool at_ret = false;             // FL_SLOW_AT_RET: ip on the function's `ret`
};

// Not thread-safe: one per thread that reads records (the collector's).
class StackResolver : NonCopyable {
 public:
  struct Options {
    size_t max_frames = 64;
    // Taken in by see_process at once: a bound on memory and on descriptors
    // (the unwinder keeps each executable file of a process open).
    size_t max_processes = 256;
    std::string proc_root = "/proc";
    SearchPaths debug_paths;  // where separate debug files of stripped binaries are looked for
  };

  StackResolver();
  explicit StackResolver(Options options);
  ~StackResolver();

  // Innermost first, at most max_frames. The first frame is regs.ip (in the
  // function itself at a ret site, in the caller after a uretprobe). Never
  // throws; a frame it cannot name keeps its address with empty
  // symbol/binary (binary is "[vdso]", "[uprobes]" and the like for the
  // kernel's special mappings); unwinding stops where the copy or the CFI
  // ends, at a return address that is not in executable memory, and at a
  // pending uretprobe's trampoline ("[uprobes]", whose real return address
  // only the kernel knows).
  std::vector<StackFrame> resolve(const StackSample& sample);

  // A record of the process arrived: unless known already, read its memory
  // map and open the file of every executable mapping now, while the
  // process still runs (a short-lived one may be gone by the time its
  // record is resolved, and with it /proc/PID/maps and /proc/PID/root).
  // At most max_processes are taken in; past that, resolve reads the map
  // as it goes.
  void see_process(int pid);

  // The process exited: drop its memory map, unwinder and the symbol tables
  // only it used.
  void forget_process(int pid);

  // Drops the state of processes `gone` says have exited, once a call found
  // them gone twice: call it where every record that arrived so far has
  // been resolved, so that what the ring still held of a process when it
  // was first found gone (its records precede its exit) has been read and
  // resolved in between.
  void forget_exited(const std::function<bool(int pid)>& gone);

  bool knows_process(int pid) const { return processes_.contains(pid); }
  // Processes with state kept (tests).
  size_t process_count() const { return processes_.size(); }
  // Their pids, to forget those that exited.
  std::vector<int> known_processes() const {
    std::vector<int> pids;
    for (const auto& entry : processes_) pids.push_back(entry.first);
    return pids;
  }

  struct Process;  // defined in the .cpp

 private:
  // Identifies a file across processes and mount namespaces; a rewritten
  // file is a new one.
  using FileKey = std::tuple<uint64_t, uint64_t, int64_t, int64_t, int64_t>;

  Process& process(int pid);
  void read_maps(Process& process);
  std::string openable_path(const Process& process, const MemoryMapping& mapping) const;
  std::shared_ptr<BinarySymbols> binary_for(Process& process, size_t mapping_index);
  // Tells the process's unwinder about the file of one of its mappings.
  void place_module(Process& process, size_t mapping_index);
  StackFrame frame_at(Process& process, uint64_t address, bool return_address);

  Options options_;
  std::map<int, std::unique_ptr<Process>> processes_;
  std::set<int> found_gone_;  // by the last forget_exited
  std::map<FileKey, std::weak_ptr<BinarySymbols>> binaries_;
};

}  // namespace funclatency
