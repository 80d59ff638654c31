// Where a function's probes go, decided from its machine code. The one place
// that decides it: -l, -v and the attach layer all read a ProbePlan.
//
// Entry: after a leading endbr64 (single-stepped at ~10x the cost of an
// emulated instruction), unless the function's own code jumps there (a self
// tail call compiled as a loop), which would look like a new call. Go code:
// on the branch of the stack-check prologue (`cmp rsp, [r14+0x10]; jbe`),
// which the kernel emulates while the cmp would be single-stepped; SP is
// still the caller's there.
//
// Exit: a uretprobe replaces the return address on the stack with a
// trampoline that has no unwind info, so a C++ exception unwinding through
// a probed frame finds no frame description and the runtime calls
// std::terminate(). Probing the function's own `ret` instructions leaves the
// stack alone and is exception-safe, but the kernel single-steps `ret`
// (--calibrate here: ~5 us inside a measured call against ~1.5 us for a
// return probe), so ret probes are used
// only where exceptions can unwind. Go code always ends at its ret
// instructions: Go walks its stacks (copying, GC, panics) and a return
// probe's trampoline address kills the program.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "symbols/probe_site.h"

namespace funclatency {

struct CodeFacts {
  std::vector<uint64_t> emulated;      // instructions the kernel's uprobes emulate
  std::vector<uint64_t> rets;          // addresses of ret instructions
  std::vector<uint64_t> tail_jumps;    // direct jumps that leave the function
  std::vector<uint64_t> jump_targets;  // targets of direct jumps inside it, sorted
  // Go's stack-check prologue: the address of its last branch (a jbe).
  std::optional<uint64_t> go_stack_check_branch;
  bool decoded = true;  // every instruction of the body was decoded
};

// Decodes the x86-64 code of one function that starts at `address`.
CodeFacts analyze_code(std::span<const uint8_t> code, uint64_t address);

enum class ExitProbeChoice { kAuto, kReturnProbe, kRetInstructions };

struct ProbePlan {
  uint32_t entry_skip = 0;  // bytes past the function's start the entry probe sits at
  // The kernel emulates the probed instruction (nop, push, jmp, call, jcc)
  // rather than single-stepping it: ~10x cheaper, and it decides how much of
  // the probes' cost lands inside a measured duration.
  bool entry_emulated = false;
  std::string entry_description;  // for -v: "after endbr64, +4"; empty at the first byte
  uint32_t fn_flags = 0;          // FL_FN_* for the BPF side
  bool use_ret_instructions = false;
  std::vector<uint64_t> ret_file_offsets;  // where ret probes go
  std::string exit_description;            // for -v
  // Go code: calls paired per goroutine (R14 is g), goid read at this offset.
  bool goroutine_keyed = false;
  uint32_t goid_offset = 0;
  // Why the function cannot be probed (e.g. Go code with no ret); empty when
  // it can. Such a function is left out with this note, like one the kernel
  // refuses.
  std::string refused;
};

// Pure: the plan for a function given its code (empty when unknown) and
// whether its file carries C++ exception tables. The code starts at the
// function's first byte.
ProbePlan plan_from_code(const ProbeSite& site, std::span<const uint8_t> code,
                         bool file_has_exception_tables, ExitProbeChoice choice);

// Reads each function's code and its file's sections, then plans. Keeps
// what it learnt of a file: a pattern often places thousands of functions
// in one library.
class ProbePlanner {
 public:
  Result<ProbePlan> plan(const ProbeSite& site, ExitProbeChoice choice);

 private:
  // The site's own mapped file, or one opened (once) by path.
  Result<std::shared_ptr<const ElfFile>> file_of(const ProbeSite& site);
  std::map<std::string, std::shared_ptr<const ElfFile>> files_;
  std::map<std::string, bool> exception_tables_;
};

}  // namespace funclatency
