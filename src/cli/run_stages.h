// The pure stages of a run: what main.cpp's run() computes from the Config
// and from what the stages before it returned (targets, plans, attached
// sites), and the text it shows. No I/O, so each is tested alone.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/config.h"
#include "collect/aggregator.h"
#include "collect/calibration.h"
#include "collect/trace_session.h"
#include "common/error.h"
#include "probe/bpf_object.h"
#include "probe/code_options.h"
#include "probe/library_watch.h"
#include "probe/probe_plan.h"
#include "probe/uprobe_links.h"
#include "symbols/elf_symbol_resolver.h"
#include "symbols/probe_site.h"

namespace funclatency {

// What the TARGETs name, planned: sites[i] is probed as plans[i] says, with
// function id i. With -p and --wait-for-library, `waiting` holds the TARGETs
// whose library the process has yet to load.
struct PlannedTargets {
  std::vector<ProbeSite> sites;
  std::vector<ProbePlan> plans;
  std::vector<TargetSpec> waiting;
};

// The TARGET arguments parsed; one that names no binary needs -p.
Result<std::vector<TargetSpec>> parse_targets(const Config& config);
ResolveOptions resolve_options(const Config& config);

// The run is refused when an option is not defined for a TARGET's code
// (--cpu-split for Go, --by arg6 for C), naming the first such function.
Result<void> refuse_options_code_lacks(const Config& config, std::span<const ProbeSite> sites);

// The BPF object's settings: sizes (with room for functions of libraries
// loaded later), unit, starting mode, and each function's flags and probe
// cost to subtract.
LoadOptions load_options(const Config& config, const PlannedTargets& targets,
                         const std::optional<Calibration>& calibration);
// How functions attached after the start are resolved, planned and set up.
AttachSettings attach_settings(const Config& config, const LoadOptions& load, AttachMethod method,
                               std::optional<Calibration> calibration);
// How the library watch attaches the functions of libraries loaded later.
WatchOptions watch_options(const Config& config, const LoadOptions& load, AttachMethod method,
                           uint32_t first_free_fn_id, std::optional<Calibration> calibration);
// (binary, file offset) of each site, which a later library must not probe again.
std::set<std::pair<std::string, uint64_t>> site_keys(std::span<const ProbeSite> sites);
// The session's settings that come from the command line alone.
SessionOptions session_options(const Config& config);
// --slowest/--slower-than as the collector's threshold policy takes them.
SlowThresholdOptions slow_threshold_options(const Config& config);

// A group per traced function (one for all with --merge); function ids with
// no traced site report nowhere.
struct ReportGroups {
  std::vector<ReportGroup> groups;
  std::vector<uint32_t> group_of_function;
};
ReportGroups report_groups(const Config& config, std::span<const AttachedSite> traced,
                           uint32_t num_functions);

// -v: how the probes were attached, and where one function's went.
std::string links_line(size_t link_count, AttachMethod method);
std::string attached_line(const AttachedSite& site);
// The note on functions the kernel or the planner refused; empty when none was.
std::string dropped_line(std::span<const DroppedFunction> dropped);

// The line that starts the run ("Tracing 2 functions for ...") and the one
// that ends it when a library never came.
std::string start_banner(const Config& config, std::span<const AttachedSite> traced,
                         std::span<const TargetSpec> pending);
std::string never_loaded_line(int pid, std::span<const TargetSpec> pending);
// --follow/--config: what is followed (and, with --check-config, that the
// file is valid).
std::string follow_banner(const Config& config);
// --follow/--config with -v: what the node's RCU grace periods are, given
// /sys/kernel/rcu_expedited's content. A new program file's first uprobe
// registration waits for one (the kernel's dup_mmap_sem), so they set how
// long after its exec a new file is attached; the setting is the node's.
// Empty for content that is neither 0 nor 1 (the file unread).
std::string grace_period_line(std::string_view rcu_expedited);

// -l: every function the TARGETs match, with the entry offset the planner
// chose; plans[i] is listed[i]'s plan, or empty for a function the resolver
// refused.
std::string format_listing(std::span<const ListedFunction> listed,
                           std::span<const std::optional<ProbePlan>> plans);

}  // namespace funclatency
