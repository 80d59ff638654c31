// The stack resolver (see stack_resolver.h): per process, its memory map and
// a libdw unwinder that is told about a mapped file when a walk first reaches
// it; per file, its function ranges.
#include "stacks/stack_resolver.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <utility>

#include "stacks/binary_symbols.h"
#include "stacks/dwarf_unwinder.h"
#include "stacks/process_maps.h"
#include "symbols/demangle.h"

namespace funclatency {

namespace {

// A walk starts over when it reaches a file the unwinder has not been told
// of yet, or an address the memory map does not cover: bounded, in case a
// process keeps mapping files.
constexpr int kMaxWalks = 64;
// Addresses found unmapped after a fresh read of the map (garbage a walk met)
// are not worth another read; a bounded memory of them.
constexpr size_t kMaxKnownUnmapped = 256;

enum class ModuleState { kUnknown, kPlaced, kUnusable };

// Why a walk ended.
enum class Stop {
  kEnd,         // the copy, the CFI or the frame-pointer chain ended, or max_frames
  kNeedModule,  // at a file the unwinder must be told of first
  kUnmapped,    // at an address the memory map (maybe an old one) does not cover
};

struct Pc {
  uint64_t address = 0;
  bool return_address = false;  // the frame is named by the call before it
};

// A uretprobe replaces the return address with the start of the kernel's
// [uprobes] page (its trampoline): the address itself is there, not the one
// before it.
bool is_uretprobe_trampoline(const std::vector<MemoryMapping>& maps, uint64_t address) {
  const MemoryMapping* mapping = find_mapping(maps, address);
  return mapping != nullptr && mapping->path == "[uprobes]";
}

}  // namespace

struct StackResolver::Process {
  int pid = 0;
  std::vector<MemoryMapping> maps;
  std::vector<ModuleState> modules;  // of each mapping, for the unwinder
  std::unique_ptr<DwarfUnwinder> unwinder;
  std::set<std::pair<std::string, uint64_t>> placed;  // files given the unwinder, by path and bias
  std::set<uint64_t> known_unmapped;
  // The files of its mappings (null: unreadable), by path and inode.
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<BinarySymbols>> binaries;
};

namespace {

struct WalkResult {
  std::vector<Pc> pcs;
  Stop stop = Stop::kEnd;
  size_t mapping = 0;    // kNeedModule: the mapping whose file is needed
  uint64_t address = 0;  // kUnmapped: the address
};

// Walks from `start` until the unwinder ends, or a frame's address says the
// walk must start over (see Stop) or is not a return address (not in
// executable memory: garbage, dropped), or stands in a pending uretprobe's
// trampoline ([uprobes]: the real return address is the kernel's, kept).
WalkResult walk_once(StackResolver::Process& process, const UserRegisters& start,
                     bool start_is_return, const MemoryWindow& stack, size_t max_frames,
                     bool maps_reread) {
  WalkResult result;
  // True when the walk may keep `pc`; sets result.stop when it must start over.
  const auto check = [&](uint64_t pc, bool is_return, bool first) {
    if (is_uretprobe_trampoline(process.maps, pc)) return true;
    const uint64_t lookup = is_return ? pc - 1 : pc;
    const MemoryMapping* mapping = find_mapping(process.maps, lookup);
    if (mapping == nullptr) {
      if (!maps_reread && !process.known_unmapped.contains(lookup)) {
        result.stop = Stop::kUnmapped;
        result.address = lookup;
        return false;
      }
      return first;  // where the walk starts is kept, whatever it is
    }
    const size_t index = static_cast<size_t>(mapping - process.maps.data());
    if (mapping->is_file() && mapping->executable &&
        process.modules[index] == ModuleState::kUnknown) {
      result.stop = Stop::kNeedModule;
      result.mapping = index;
      return false;
    }
    return first || mapping->executable;
  };
  // The first frame's file goes to the unwinder before it starts.
  if (!check(start.ip, start_is_return, true)) return result;
  bool first = true;
  process.unwinder->walk(start, stack, max_frames, [&](uint64_t pc, bool activation) {
    const bool is_return = first ? start_is_return : !activation;
    if (!check(pc, is_return, first)) return false;
    first = false;
    result.pcs.push_back({pc, is_return});
    return !is_uretprobe_trampoline(process.maps, pc);
  });
  return result;
}

}  // namespace

StackResolver::StackResolver() : StackResolver(Options{}) {}

StackResolver::StackResolver(Options options) : options_(std::move(options)) {}

StackResolver::~StackResolver() = default;

StackResolver::Process& StackResolver::process(int pid) {
  auto& slot = processes_[pid];
  if (!slot) {
    slot = std::make_unique<Process>();
    slot->pid = pid;
    slot->unwinder = std::make_unique<DwarfUnwinder>(pid);
    read_maps(*slot);
  }
  return *slot;
}

// A process that has exited keeps the map it had: its records may still be
// in flight. Mappings that stayed keep what the unwinder knows of their
// files; when one it was told of is gone, it starts over.
void StackResolver::read_maps(Process& process) {
  auto maps = read_process_maps(options_.proc_root, process.pid);
  if (!maps || *maps == process.maps) return;
  std::vector<ModuleState> modules(maps->size(), ModuleState::kUnknown);
  bool placed_gone = false;
  for (size_t i = 0; i < process.maps.size(); ++i) {
    const MemoryMapping* same = find_mapping(*maps, process.maps[i].start);
    if (same != nullptr && *same == process.maps[i]) {
      modules[static_cast<size_t>(same - maps->data())] = process.modules[i];
    } else if (process.modules[i] == ModuleState::kPlaced) {
      placed_gone = true;
    }
  }
  if (placed_gone) {
    process.unwinder = std::make_unique<DwarfUnwinder>(process.pid);
    process.placed.clear();
    std::ranges::fill(modules, ModuleState::kUnknown);
  }
  process.maps = std::move(*maps);
  process.modules = std::move(modules);
  process.known_unmapped.clear();
}

// Through the process's root, so that files of another mount namespace are
// found; a deleted file only through its mapping.
std::string StackResolver::openable_path(const Process& process,
                                         const MemoryMapping& mapping) const {
  if (mapping.is_deleted()) {
    return fmt::format("{}/{}/map_files/{:x}-{:x}", options_.proc_root, process.pid, mapping.start,
                       mapping.end);
  }
  return fmt::format("{}/{}/root{}", options_.proc_root, process.pid, mapping.path);
}

std::shared_ptr<BinarySymbols> StackResolver::binary_for(Process& process, size_t mapping_index) {
  const MemoryMapping& mapping = process.maps[mapping_index];
  if (!mapping.is_file()) return nullptr;
  const auto name = std::make_pair(mapping.path, mapping.inode);
  if (auto known = process.binaries.find(name); known != process.binaries.end()) {
    return known->second;
  }
  const std::string openable = openable_path(process, mapping);
  std::shared_ptr<BinarySymbols> binary;
  struct stat status {};
  if (::stat(openable.c_str(), &status) == 0) {
    const FileKey key{status.st_dev, status.st_ino, status.st_size, status.st_mtim.tv_sec,
                      status.st_mtim.tv_nsec};
    binary = binaries_[key].lock();
    if (!binary) {
      if (auto opened = BinarySymbols::open(openable, options_.debug_paths)) {
        binary = *opened;
        binaries_[key] = binary;
      }
    }
  }
  process.binaries.emplace(name, binary);
  return binary;
}

void StackResolver::place_module(Process& process, size_t mapping_index) {
  process.modules[mapping_index] = ModuleState::kUnusable;
  const MemoryMapping& mapping = process.maps[mapping_index];
  const auto binary = binary_for(process, mapping_index);
  if (!binary) return;
  const auto elf_address = binary->address_at_offset(mapping.file_offset);
  if (!elf_address) return;
  const uint64_t bias = mapping.start - *elf_address;
  // A file mapped executable more than once is one module.
  const auto placed = std::make_pair(mapping.path, bias);
  // libdwfl learns the architecture from a file not named "... (deleted)"
  // (it takes those for files it cannot read): the name is only a label.
  if (process.placed.contains(placed) ||
      process.unwinder->add_module(std::string(mapping.file_path()),
                                   openable_path(process, mapping), bias)) {
    process.modules[mapping_index] = ModuleState::kPlaced;
    process.placed.insert(placed);
  }
}

StackFrame StackResolver::frame_at(Process& process, uint64_t address, bool return_address) {
  StackFrame frame;
  frame.address = address;
  if (is_uretprobe_trampoline(process.maps, address)) {
    frame.binary = "[uprobes]";
    return frame;
  }
  // A return address follows its call, which may be a function's last
  // instruction: the call is what names the frame.
  const uint64_t lookup = return_address && address > 0 ? address - 1 : address;
  const MemoryMapping* mapping = find_mapping(process.maps, lookup);
  if (mapping == nullptr) return frame;
  if (!mapping->is_file()) {
    if (mapping->path.starts_with('[')) frame.binary = mapping->path;
    return frame;
  }
  frame.binary = mapping->path;
  auto binary = binary_for(process, static_cast<size_t>(mapping - process.maps.data()));
  if (!binary) return frame;
  const auto elf_address =
      binary->address_at_offset(lookup - mapping->start + mapping->file_offset);
  if (!elf_address) return frame;
  const FunctionRange* function = binary->function_at(*elf_address);
  if (function == nullptr) return frame;
  frame.symbol = demangle(function->name);
  frame.offset = *elf_address + (address - lookup) - function->start;
  return frame;
}

std::vector<StackFrame> StackResolver::resolve(const StackSample& sample) {
  std::vector<StackFrame> frames;
  std::vector<Pc> pcs;
  try {
    if (options_.max_frames == 0) return frames;
    Process& proc = process(sample.pid);
    const MemoryWindow stack{sample.regs.sp, sample.stack};
    UserRegisters start = sample.regs;
    bool start_is_return = true;  // after a uretprobe, regs.ip is a return address
    if (sample.at_ret) {
      // On a `ret`, executing it would only pop the return address: walking
      // from there is exact whatever the function's CFI, and a frame-pointer
      // walk does not lose the immediate caller (rbp, restored by the
      // epilogue, is already the caller's).
      pcs.push_back({sample.regs.ip, false});
      uint64_t return_address = 0;  // stays 0, ending the stack, when the copy lacks it
      stack.read(sample.regs.sp, return_address);
      start.ip = return_address;
      start.sp = sample.regs.sp + 8;
    }
    if (start.ip != 0 && pcs.size() < options_.max_frames) {
      const size_t room = options_.max_frames - pcs.size();
      WalkResult walk;
      bool maps_reread = false;
      for (int walks = 0; walks < kMaxWalks; ++walks) {
        walk = walk_once(proc, start, start_is_return, stack, room, maps_reread);
        if (walk.stop == Stop::kNeedModule) {
          place_module(proc, walk.mapping);
        } else if (walk.stop == Stop::kUnmapped) {
          // A library mapped since the map was read, or garbage.
          maps_reread = true;
          read_maps(proc);
          if (find_mapping(proc.maps, walk.address) == nullptr &&
              proc.known_unmapped.size() < kMaxKnownUnmapped) {
            proc.known_unmapped.insert(walk.address);
          }
        } else {
          break;
        }
      }
      if (walk.pcs.empty()) walk.pcs.push_back({start.ip, start_is_return});
      pcs.insert(pcs.end(), walk.pcs.begin(), walk.pcs.end());
    }
    frames.reserve(pcs.size());
    for (const Pc& pc : pcs) frames.push_back(frame_at(proc, pc.address, pc.return_address));
  } catch (const std::exception&) {
    // Out of memory: what was found so far, unnamed.
    frames.clear();
    for (const Pc& pc : pcs) frames.push_back(StackFrame{.address = pc.address});
  }
  return frames;
}

void StackResolver::see_process(int pid) {
  if (processes_.contains(pid) || processes_.size() >= options_.max_processes) return;
  try {
    Process& proc = process(pid);
    for (size_t i = 0; i < proc.maps.size(); ++i) {
      const MemoryMapping& mapping = proc.maps[i];
      if (mapping.is_file() && mapping.executable && proc.modules[i] == ModuleState::kUnknown) {
        place_module(proc, i);
      }
    }
  } catch (const std::exception&) {
    // Out of memory: resolve tries again.
    processes_.erase(pid);
  }
}

void StackResolver::forget_process(int pid) {
  processes_.erase(pid);
  found_gone_.erase(pid);
  std::erase_if(binaries_, [](const auto& entry) { return entry.second.expired(); });
}

void StackResolver::forget_exited(const std::function<bool(int pid)>& gone) {
  std::set<int> now_gone;
  for (const auto& entry : processes_) {
    if (gone(entry.first)) now_gone.insert(entry.first);
  }
  for (int pid : now_gone) {
    if (found_gone_.contains(pid)) forget_process(pid);
  }
  std::erase_if(now_gone, [this](int pid) { return !processes_.contains(pid); });
  found_gone_ = std::move(now_gone);
}

}  // namespace funclatency
