#include "probe/probe_plan.h"

#include <capstone/capstone.h>
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
  csh handle;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) {
    facts.decoded = false;
    return facts;
  }
  cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  cs_insn* insn = cs_malloc(handle);
  const uint8_t* bytes = code.data();
  size_t remaining = code.size();
  uint64_t pc = address;
  const uint64_t end = address + code.size();
  while (remaining > 0) {
    if (!cs_disasm_iter(handle, &bytes, &remaining, &pc, insn)) {
      facts.decoded = false;
      break;
    }
    if (insn->id == X86_INS_PUSH || insn->id == X86_INS_NOP || insn->id == X86_INS_CALL ||
        cs_insn_group(handle, insn, CS_GRP_JUMP)) {
      // Of these, x86 uprobes emulate push of a register, nop, and relative
      // jumps and calls; indirect forms are single-stepped.
      const cs_x86& ops = insn->detail->x86;
      bool register_or_relative = ops.op_count == 0 || ops.operands[0].type == X86_OP_REG ||
                                  ops.operands[0].type == X86_OP_IMM;
      bool nop = insn->id == X86_INS_NOP;
      bool push_register = insn->id == X86_INS_PUSH && ops.operands[0].type == X86_OP_REG;
      bool relative =
          insn->id != X86_INS_PUSH && ops.op_count == 1 && ops.operands[0].type == X86_OP_IMM;
      if (register_or_relative && (nop || push_register || relative)) {
        facts.emulated.push_back(insn->address);
      }
    }
    if (insn->id == X86_INS_RET) {
      facts.rets.push_back(insn->address);
      continue;
    }
    bool is_jump = cs_insn_group(handle, insn, CS_GRP_JUMP);
    const cs_x86& x86 = insn->detail->x86;
    if (!is_jump || x86.op_count != 1 || x86.operands[0].type != X86_OP_IMM) continue;
    auto target = static_cast<uint64_t>(x86.operands[0].imm);
    if (target >= address && target < end) {
      facts.jump_targets.push_back(target);
    } else if (insn->id == X86_INS_JMP) {
      facts.tail_jumps.push_back(insn->address);
    }
  }
  cs_free(insn, 1);
  cs_close(&handle);
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
