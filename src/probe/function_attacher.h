// Attaching functions after the start: the functions a TARGET names in one
// file, resolved, planned, given function ids the maps were sized for, set
// up in the BPF object and attached. The library watch (a library a process
// dlopen()s) and the program follower (a program a container starts) both
// attach this way; each decides which file, and keeps the links it gets.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "probe/bpf_object.h"
#include "probe/probe_plan.h"
#include "probe/uprobe_links.h"
#include "symbols/elf_symbol_resolver.h"

namespace funclatency {

struct AttachSettings {
  ResolveOptions resolve;
  ExitProbeChoice exit_probes = ExitProbeChoice::kAuto;
  uint32_t initial_mode = 0;  // enum fl_mode for functions attached later
  AttachMethod method = AttachMethod::kUprobeMulti;
  // Probe cost to take off each duration (--subtract-overhead), by plan.
  std::function<uint64_t(const ProbePlan&)> subtract_ns;
  // What the probes cost a call, by plan (calibrated), for the self-metrics.
  std::function<uint64_t(const ProbePlan&)> cost_ns;
};

// What one attach sets on the functions it adds, beyond the settings.
struct FunctionOptions {
  std::optional<uint32_t> mode;           // enum fl_mode; unset: the settings' initial mode
  uint32_t extra_flags = 0;               // FL_FN_*, joined to the planner's
  std::optional<FunctionSlowCalls> slow;  // a --config target's own; unset: the run's
};

// Why a file's functions were not attached, for counting (self-metrics).
enum class AttachFailure {
  kNoFunction,     // the file has no function the TARGET names (or cannot be read)
  kNoRoom,         // the maps have no function id left
  kKernelRefused,  // the kernel refused every probe
};

struct AttachError {
  AttachFailure reason;
  Error error;
};

// The links a file got and the functions they time.
struct AttachedFile {
  UprobeLinks links;
  std::vector<std::string> notes;        // for stderr: functions left out and why
  std::map<uint32_t, uint64_t> cost_ns;  // by function id: AttachSettings::cost_ns
};

class FunctionAttacher {
 public:
  // Function ids [first_free_fn_id, object.num_functions()) are free.
  // `resolver` and `planner` must outlive it.
  FunctionAttacher(AttachSettings settings, uint32_t first_free_fn_id, ElfSymbolResolver& resolver,
                   ProbePlanner& planner);

  // The functions `spec` names in the file at `path` (spec.binary is not
  // read). `seen_by` is the process the path is read through (a path in its
  // mount namespace, "/proc/PID/root/..."); the probes fire in process
  // `only` or, unset, in every process that runs the file. `keep` decides per
  // site (e.g. not one probed already); null keeps all.
  std::expected<AttachedFile, AttachError> attach(
      const std::string& path, const TargetSpec& spec, BpfObject& object,
      std::optional<int> seen_by, std::optional<int> only,
      const std::function<bool(const ProbeSite&)>& keep = {}, const FunctionOptions& options = {});

  uint32_t free_ids(const BpfObject& object) const {
    return object.function_ids_end() - next_fn_id_;
  }

 private:
  AttachSettings settings_;
  uint32_t next_fn_id_;
  ElfSymbolResolver& resolver_;
  ProbePlanner& planner_;
};

// "\"symbol\"" or "\"symbol\" and N more", for notes on what was attached.
std::string attached_names(const std::vector<AttachedSite>& sites);

}  // namespace funclatency
