#include "probe/probe_plan.h"

#include <Zydis/Zydis.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

namespace {

bool is_register(const ZydisDecodedOperand& operand, ZydisRegister reg) {
  return operand.type == ZYDIS_OPERAND_TYPE_REGISTER && operand.reg.value == reg;
}

// [r14+0x10]: g.stackguard0 in Go's register ABI on amd64.
bool is_stack_guard(const ZydisDecodedOperand& operand) {
  return operand.type == ZYDIS_OPERAND_TYPE_MEMORY && operand.mem.base == ZYDIS_REGISTER_R14 &&
         operand.mem.index == ZYDIS_REGISTER_NONE && operand.mem.disp.has_displacement &&
         operand.mem.disp.value == 0x10;
}

// One decoded instruction of a function's first few.
struct HeadInstruction {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
  uint64_t at;

  bool is(ZydisMnemonic mnemonic) const { return insn.mnemonic == mnemonic; }
  bool conditional_branch() const { return insn.meta.category == ZYDIS_CATEGORY_COND_BR; }
  // The branch to morestack the BPF side reads the flags of (CF or ZF: taken).
  bool jbe() const { return is(ZYDIS_MNEMONIC_JBE); }
  bool compares_with_stack_guard(ZydisRegister reg) const {
    return is(ZYDIS_MNEMONIC_CMP) &&
           ((is_register(operands[0], reg) && is_stack_guard(operands[1])) ||
            (is_stack_guard(operands[0]) && is_register(operands[1], reg)));
  }
};
constexpr size_t kHeadInstructions = 5;

// Go's stack-check prologue, as Go 1.17+ emits it on amd64:
//   cmp rsp, [r14+0x10]; jbe morestack                       small frames
//   lea r12, [rsp-N]; cmp r12, [r14+0x10]; jbe morestack      (other versions)
//   mov r12, rsp; sub r12, N; jb morestack;                   big frames (1.19)
//     cmp r12, [r14+0x10]; jbe morestack
// The address of its last branch: the kernel emulates it, SP is still the
// caller's there, and the flags say whether morestack comes next (see
// FL_FN_GO_STACK_CHECK). Nothing when the function has no such prologue.
std::optional<uint64_t> go_stack_check_branch(std::span<const HeadInstruction> head) {
  auto at = [&head](size_t index) -> const HeadInstruction* {
    return index < head.size() ? &head[index] : nullptr;
  };
  const ZydisRegister rsp = ZYDIS_REGISTER_RSP, r12 = ZYDIS_REGISTER_R12;
  if (at(1) && head[0].compares_with_stack_guard(rsp) && head[1].jbe()) {
    return head[1].at;
  }
  if (at(2) && head[0].is(ZYDIS_MNEMONIC_LEA) && is_register(head[0].operands[0], r12) &&
      head[0].operands[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
      head[0].operands[1].mem.base == rsp && head[1].compares_with_stack_guard(r12) &&
      head[2].jbe()) {
    return head[2].at;
  }
  if (at(4) && head[0].is(ZYDIS_MNEMONIC_MOV) && is_register(head[0].operands[0], r12) &&
      is_register(head[0].operands[1], rsp) && head[1].is(ZYDIS_MNEMONIC_SUB) &&
      is_register(head[1].operands[0], r12) && head[2].conditional_branch() &&
      head[3].compares_with_stack_guard(r12) && head[4].jbe()) {
    return head[4].at;
  }
  return {};
}

}  // namespace

CodeFacts analyze_code(std::span<const uint8_t> code, uint64_t address) {
  CodeFacts facts;
  ZydisDecoder decoder;
  if (ZYAN_FAILED(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    facts.decoded = false;
    return facts;
  }
  const uint64_t end = address + code.size();
  std::vector<HeadInstruction> head;
  HeadInstruction current;
  ZydisDecodedInstruction& insn = current.insn;
  ZydisDecodedOperand* operands = current.operands;
  for (size_t offset = 0; offset < code.size(); offset += insn.length) {
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder, code.data() + offset, code.size() - offset,
                                           &insn, operands))) {
      facts.decoded = false;
      break;
    }
    const uint64_t at = address + offset;
    current.at = at;
    if (head.size() < kHeadInstructions) head.push_back(current);
    const unsigned visible = insn.operand_count_visible;
    const bool first_is_register = visible >= 1 && operands[0].type == ZYDIS_OPERAND_TYPE_REGISTER;
    const bool one_relative_operand = visible == 1 &&
                                      operands[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
                                      operands[0].imm.is_relative;
    const bool is_jump = insn.meta.category == ZYDIS_CATEGORY_COND_BR ||
                         insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
    // x86 uprobes emulate nops (this kernel turns a 5-byte one into a call),
    // a push of a register, and relative jumps and calls; every other first
    // instruction is single-stepped (DESIGN.md's cost table).
    const bool nop = insn.mnemonic == ZYDIS_MNEMONIC_NOP;
    const bool push_register = insn.mnemonic == ZYDIS_MNEMONIC_PUSH && first_is_register;
    const bool relative_branch =
        (is_jump || insn.mnemonic == ZYDIS_MNEMONIC_CALL) && one_relative_operand;
    if (nop || push_register || relative_branch) facts.emulated.push_back(at);
    // A near return (opcodes c3, c2 imm16); far returns are not a function's.
    if (insn.mnemonic == ZYDIS_MNEMONIC_RET && (insn.opcode == 0xc3 || insn.opcode == 0xc2)) {
      facts.rets.push_back(at);
      continue;
    }
    if (!is_jump || !one_relative_operand) continue;
    uint64_t target = 0;
    if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&insn, &operands[0], at, &target))) continue;
    if (target >= address && target < end) {
      facts.jump_targets.push_back(target);
    } else if (insn.mnemonic == ZYDIS_MNEMONIC_JMP) {
      facts.tail_jumps.push_back(at);
    }
  }
  std::sort(facts.jump_targets.begin(), facts.jump_targets.end());
  facts.go_stack_check_branch = go_stack_check_branch(head);
  return facts;
}

namespace {

// Why a function's calls cannot end at its ret instructions, or null.
const char* why_no_ret_probes(const CodeFacts& facts, uint64_t entry) {
  if (!facts.decoded) return "code not fully decoded";
  if (!facts.tail_jumps.empty()) return "it leaves by a tail jump";
  if (facts.rets.empty()) return "no ret instruction";
  if (std::find(facts.rets.begin(), facts.rets.end(), entry) != facts.rets.end()) {
    return "a ret at the entry probe";
  }
  return nullptr;
}

void place_ret_probes(const ProbeSite& site, const CodeFacts& facts, ProbePlan& plan) {
  plan.use_ret_instructions = true;
  for (uint64_t ret : facts.rets) {
    plan.ret_file_offsets.push_back(site.file_offset + (ret - site.address));
  }
}

std::string ret_probes(size_t count) {
  return fmt::format("{} ret probe{}", count, count == 1 ? "" : "s");
}

bool is_emulated(const CodeFacts& facts, uint64_t address) {
  return std::binary_search(facts.emulated.begin(), facts.emulated.end(), address);
}

// Go code: entry on the stack check's branch, exits on every ret, calls
// paired per goroutine. Never a return probe, whatever --exit-probes says.
ProbePlan plan_go(const ProbeSite& site, const CodeFacts& facts) {
  ProbePlan plan;
  plan.goroutine_keyed = true;
  plan.goid_offset = site.go->goid_offset;
  if (facts.go_stack_check_branch) {
    plan.entry_skip = *facts.go_stack_check_branch - site.address;
    plan.entry_description = fmt::format("on the stack check's branch, +{}", plan.entry_skip);
    plan.fn_flags |= FL_FN_GO_STACK_CHECK;
  }
  const uint64_t entry = site.address + plan.entry_skip;
  plan.entry_emulated = is_emulated(facts, entry);
  if (const char* why_not = why_no_ret_probes(facts, entry)) {
    plan.refused = fmt::format("Go code with {}: a return probe would crash the program", why_not);
    return plan;
  }
  place_ret_probes(site, facts, plan);
  plan.exit_description = fmt::format("Go {}.{}, goroutine-keyed, {}", site.go->major,
                                      site.go->minor, ret_probes(facts.rets.size()));
  return plan;
}

}  // namespace

ProbePlan plan_from_code(const ProbeSite& site, std::span<const uint8_t> code,
                         bool file_has_exception_tables, ExitProbeChoice choice) {
  if (code.empty()) {
    ProbePlan plan;
    plan.exit_description = "return probe (function code unknown)";
    if (site.go) plan.refused = "Go code that could not be read: a return probe would crash it";
    return plan;
  }
  CodeFacts facts = analyze_code(code, site.address);
  if (site.go) return plan_go(site, facts);

  ProbePlan plan;
  auto jumped_to = [&facts](uint64_t address) {
    return std::binary_search(facts.jump_targets.begin(), facts.jump_targets.end(), address);
  };
  // After an endbr64, unless a jump inside the function reaches that spot.
  if (starts_with_endbr64(code) && !jumped_to(site.address + 4)) {
    plan.entry_skip = 4;
    plan.entry_description = "after endbr64, +4";
  }
  if (jumped_to(site.address + plan.entry_skip)) plan.fn_flags |= FL_FN_JUMPS_TO_ENTRY;
  plan.entry_emulated = is_emulated(facts, site.address + plan.entry_skip);

  if (choice == ExitProbeChoice::kReturnProbe) {
    plan.exit_description = "return probe (--exit-probes uretprobe)";
    return plan;
  }
  if (choice == ExitProbeChoice::kAuto && !file_has_exception_tables) {
    plan.exit_description = "return probe (no C++ exception tables in the file)";
    return plan;
  }
  if (const char* why_not = why_no_ret_probes(facts, site.address + plan.entry_skip)) {
    plan.exit_description = fmt::format(
        "return probe ({}; a C++ exception unwinding through it would terminate the process)",
        why_not);
    return plan;
  }
  place_ret_probes(site, facts, plan);
  plan.exit_description = ret_probes(facts.rets.size()) + " (exception-safe)";
  return plan;
}

Result<std::shared_ptr<const ElfFile>> ProbePlanner::file_of(const ProbeSite& site) {
  if (site.file) return site.file;
  if (auto known = files_.find(site.binary); known != files_.end()) return known->second;
  auto opened = ElfFile::open(site.binary);
  if (!opened) return std::unexpected(opened.error());
  auto file = std::make_shared<const ElfFile>(std::move(*opened));
  files_.emplace(site.binary, file);
  return file;
}

Result<ProbePlan> ProbePlanner::plan(const ProbeSite& site, ExitProbeChoice choice) {
  auto file = file_of(site);
  if (!file) return std::unexpected(file.error());
  // Functions larger than this are rare and not worth decoding whole.
  constexpr uint64_t kMaxDecoded = 1 << 20;
  std::span<const uint8_t> code;
  if (site.size > 0 && site.size <= kMaxDecoded) {
    code = (*file)->bytes_at(site.file_offset, site.size);
    if (code.size() != site.size) {
      return runtime_error(fmt::format("read the code of {} in {}", site.symbol, site.binary), EIO);
    }
  }
  bool exception_tables = false;
  if (choice == ExitProbeChoice::kAuto) {
    auto known = exception_tables_.find(site.binary);
    if (known == exception_tables_.end()) {
      known =
          exception_tables_.emplace(site.binary, (*file)->section(".gcc_except_table").has_value())
              .first;
    }
    exception_tables = known->second;
  }
  return plan_from_code(site, code, exception_tables, choice);
}

}  // namespace funclatency
