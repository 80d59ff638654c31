// With -p, TARGETs whose library the process has not loaded yet and the
// loader cannot find (a plugin dlopen()ed from its own directory): watches
// the process's mappings and attaches their functions once the library
// appears. Probes attach to the file, so a library the loader can find is
// attached up front instead and needs none of this.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "probe/bpf_object.h"
#include "probe/function_attacher.h"
#include "probe/probe_plan.h"
#include "probe/uprobe_links.h"
#include "symbols/elf_symbol_resolver.h"

namespace funclatency {

struct WatchOptions {
  int pid = 0;
  AttachSettings attach;
  // Function ids [first_free_fn_id, object.num_functions()) are free.
  uint32_t first_free_fn_id = 0;
};

// What one poll attached, and what it could not.
struct WatchResult {
  std::vector<AttachedSite> attached;
  std::vector<std::string> notes;  // for stderr: what was loaded, what had no room
};

class LibraryWatch {
 public:
  // `already_traced`: (binary, file offset) of functions attached up front,
  // which a pattern over a later library must not probe twice. `resolver`
  // and `planner` (those that placed them, with what they learnt) must
  // outlive the watch.
  LibraryWatch(std::vector<TargetSpec> pending, WatchOptions options,
               std::set<std::pair<std::string, uint64_t>> already_traced,
               ElfSymbolResolver& resolver, ProbePlanner& planner);

  bool empty() const { return pending_.empty(); }
  const std::vector<TargetSpec>& pending() const { return pending_; }

  // Reads the process's mappings; for each newly mapped file a pending
  // TARGET names, resolves, plans and attaches its functions. The new links
  // go to `links`, so they detach with the rest.
  Result<WatchResult> poll(BpfObject& object, UprobeLinks& links);

 private:
  Result<void> attach_file(const std::string& path, const TargetSpec& spec, BpfObject& object,
                           UprobeLinks& links, WatchResult& result);

  std::vector<TargetSpec> pending_;
  WatchOptions options_;
  std::set<std::pair<std::string, uint64_t>> traced_;
  std::set<std::string> seen_files_;
  FunctionAttacher attacher_;
};

// True when a TARGET with -p should wait for its library instead of failing:
// its BINARY is a name (not a path) that neither the process's mappings, nor
// PATH, nor the loader can resolve.
bool should_wait_for_library(const TargetSpec& spec, int pid);

}  // namespace funclatency
