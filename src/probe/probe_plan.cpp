#include "probe/probe_plan.h"

#include <Zydis/Zydis.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

CodeFacts analyze_code(std::span<const uint8_t> code, uint64_t address) {
  CodeFacts facts;
  ZydisDecoder decoder;
  if (ZYAN_FAILED(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    facts.decoded = false;
    return facts;
  }
  const uint64_t end = address + code.size();
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
  for (size_t offset = 0; offset < code.size(); offset += insn.length) {
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder, code.data() + offset, code.size() - offset,
                                           &insn, operands))) {
      facts.decoded = false;
      break;
    }
    const uint64_t at = address + offset;
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
  return facts;
}

ProbePlan plan_from_code(const ProbeSite& site, std::span<const uint8_t> code,
                         bool file_has_exception_tables, ExitProbeChoice choice) {
  ProbePlan plan;
  plan.entry_skip = site.entry_skip;
  if (code.empty()) {
    plan.exit_description = "return probe (function code unknown)";
    return plan;
  }
  CodeFacts facts = analyze_code(code, site.address);
  auto jumped_to = [&facts](uint64_t address) {
    return std::binary_search(facts.jump_targets.begin(), facts.jump_targets.end(), address);
  };
  if (plan.entry_skip > 0 && jumped_to(site.address + plan.entry_skip)) {
    // Back on the endbr64, which no jump inside the function reaches.
    plan.entry_skip = 0;
  }
  if (jumped_to(site.address + plan.entry_skip)) plan.fn_flags |= FL_FN_JUMPS_TO_ENTRY;
  plan.entry_emulated = std::binary_search(facts.emulated.begin(), facts.emulated.end(),
                                           site.address + plan.entry_skip);

  if (choice == ExitProbeChoice::kReturnProbe) {
    plan.exit_description = "return probe (--exit-probes uretprobe)";
    return plan;
  }
  if (choice == ExitProbeChoice::kAuto && !file_has_exception_tables) {
    plan.exit_description = "return probe (no C++ exception tables in the file)";
    return plan;
  }
  uint64_t entry = site.address + plan.entry_skip;
  const char* why_not = nullptr;
  if (!facts.decoded) {
    why_not = "code not fully decoded";
  } else if (!facts.tail_jumps.empty()) {
    why_not = "it leaves by a tail jump";
  } else if (facts.rets.empty()) {
    why_not = "no ret instruction";
  } else if (std::find(facts.rets.begin(), facts.rets.end(), entry) != facts.rets.end()) {
    why_not = "a ret at the entry probe";
  }
  if (why_not) {
    plan.exit_description = fmt::format(
        "return probe ({}; a C++ exception unwinding through it would terminate the process)",
        why_not);
    return plan;
  }
  plan.use_ret_instructions = true;
  for (uint64_t ret : facts.rets) {
    plan.ret_file_offsets.push_back(site.file_offset + (ret - site.address));
  }
  plan.exit_description = fmt::format("{} ret probe{} (exception-safe)", facts.rets.size(),
                                      facts.rets.size() == 1 ? "" : "s");
  return plan;
}

namespace {

struct ElfCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};

// True when the file has C++ exception tables, i.e. exceptions may unwind
// through its functions.
Result<bool> has_exception_tables(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return runtime_error("open " + path, errno);
  elf_version(EV_CURRENT);
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(fd, ELF_C_READ, nullptr));
  size_t names_index = 0;
  bool found = false;
  if (elf && elf_getshdrstrndx(elf.get(), &names_index) == 0) {
    for (Elf_Scn* section = nullptr; (section = elf_nextscn(elf.get(), section)) != nullptr;) {
      GElf_Shdr header;
      if (!gelf_getshdr(section, &header)) continue;
      const char* name = elf_strptr(elf.get(), names_index, header.sh_name);
      if (name && std::strcmp(name, ".gcc_except_table") == 0) {
        found = true;
        break;
      }
    }
  }
  elf.reset();
  ::close(fd);
  return found;
}

Result<std::vector<uint8_t>> read_code(const ProbeSite& site) {
  // Functions larger than this are rare and not worth decoding whole.
  constexpr uint64_t kMaxDecoded = 1 << 20;
  std::vector<uint8_t> code;
  if (site.size == 0 || site.size > kMaxDecoded) return code;
  int fd = ::open(site.binary.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return runtime_error("open " + site.binary, errno);
  code.resize(site.size);
  ssize_t got = ::pread(fd, code.data(), code.size(), static_cast<off_t>(site.file_offset));
  int err = errno;
  ::close(fd);
  if (got != static_cast<ssize_t>(code.size())) {
    return runtime_error(fmt::format("read the code of {} in {}", site.symbol, site.binary),
                         got < 0 ? err : EIO);
  }
  return code;
}

}  // namespace

Result<bool> ProbePlanner::file_has_exception_tables(const std::string& path) {
  if (auto known = exception_tables_.find(path); known != exception_tables_.end()) {
    return known->second;
  }
  auto tables = has_exception_tables(path);
  if (tables) exception_tables_.emplace(path, *tables);
  return tables;
}

Result<ProbePlan> ProbePlanner::plan(const ProbeSite& site, ExitProbeChoice choice) {
  auto code = read_code(site);
  if (!code) return std::unexpected(code.error());
  bool exception_tables = false;
  if (choice == ExitProbeChoice::kAuto) {
    auto tables = file_has_exception_tables(site.binary);
    if (!tables) return std::unexpected(tables.error());
    exception_tables = *tables;
  }
  return plan_from_code(site, *code, exception_tables, choice);
}

}  // namespace funclatency
