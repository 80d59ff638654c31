#include "probe/library_watch.h"

#include <fmt/format.h>

#include <algorithm>

#include "symbols/binary_locator.h"
#include "symbols/proc_root_path.h"
#include "symbols/process_files.h"

namespace funclatency {
namespace {

// A mapped file's path as we can open it: the process may see another root
// (kept as a prefix, never realpath()ed back into ours).
std::string openable_path(const std::string& mapped, int pid) {
  const std::string path = process_root_prefix(pid) + mapped;
  auto resolved = real_path(path);
  return resolved ? *resolved : path;
}

std::string describe(const TargetSpec& spec) {
  return spec.binary + ":" + spec.function;
}

}  // namespace

bool should_wait_for_library(const TargetSpec& spec, int pid) {
  if (spec.binary.empty() || spec.binary.find('/') != std::string::npos) return false;
  // A dead process is an error the resolver reports, not a reason to wait.
  if (!require_process(pid)) return false;
  return !locate_binary(spec.binary, pid, SearchPaths{});
}

LibraryWatch::LibraryWatch(std::vector<TargetSpec> pending, WatchOptions options,
                           std::set<std::pair<std::string, uint64_t>> already_traced,
                           ElfSymbolResolver& resolver, ProbePlanner& planner)
    : pending_(std::move(pending)),
      options_(std::move(options)),
      traced_(std::move(already_traced)),
      next_fn_id_(options_.first_free_fn_id),
      resolver_(resolver),
      planner_(planner) {}

Result<WatchResult> LibraryWatch::poll(BpfObject& object, UprobeLinks& links) {
  WatchResult result;
  if (pending_.empty()) return result;
  auto mapped = executable_mappings(options_.pid);
  if (!mapped) {
    // The process has just exited: the session sees that and ends the run.
    if (!require_process(options_.pid)) return result;
    return std::unexpected(mapped.error());
  }
  for (const auto& file : *mapped) {
    if (!seen_files_.insert(file).second) continue;
    for (auto spec = pending_.begin(); spec != pending_.end();) {
      if (!target_names_file(spec->binary, file)) {
        ++spec;
        continue;
      }
      auto attached = attach_file(openable_path(file, options_.pid), *spec, object, links, result);
      if (!attached) {
        result.notes.push_back(fmt::format("process {} loaded {}, but {} stays untraced: {}",
                                           options_.pid, file, describe(*spec),
                                           attached.error().message()));
      }
      // Matched its library: done with it either way.
      spec = pending_.erase(spec);
    }
  }
  return result;
}

Result<void> LibraryWatch::attach_file(const std::string& path, const TargetSpec& spec,
                                       BpfObject& object, UprobeLinks& links, WatchResult& result) {
  auto resolution = resolver_.resolve_in_file(path, spec, options_.resolve);
  if (!resolution) return std::unexpected(resolution.error());
  std::vector<ProbeSite> sites;
  std::vector<ProbePlan> plans;
  for (auto& site : resolution->sites) {
    if (!traced_.insert({site.binary, site.file_offset}).second) continue;
    auto plan = planner_.plan(site, options_.exit_probes);
    if (!plan) return std::unexpected(plan.error());
    // Go code in a library loaded later (a Go plugin or c-shared library)
    // would need the goroutine-keyed programs this run did not load.
    if (plan->goroutine_keyed && plan->refused.empty() && !object.options().go_programs) {
      plan->refused = "Go code in a library loaded after the start is not traced";
    }
    sites.push_back(std::move(site));
    plans.push_back(std::move(*plan));
  }
  const uint32_t room = object.num_functions() - next_fn_id_;
  if (sites.size() > room) {
    result.notes.push_back(
        fmt::format("{} of {}'s {} matching functions are left out: no room in the maps (raise "
                    "--late-functions)",
                    sites.size() - room, path, sites.size()));
    sites.resize(room);
    plans.resize(room);
  }
  if (sites.empty()) return {};
  for (uint32_t i = 0; i < sites.size(); i++) {
    const uint64_t subtract = options_.subtract_ns ? options_.subtract_ns(plans[i]) : 0;
    auto configured = object.configure_function(next_fn_id_ + i, options_.initial_mode,
                                                plans[i].fn_flags, subtract);
    if (!configured) return std::unexpected(configured.error());
  }
  auto attached =
      UprobeLinks::attach(object, sites, plans, options_.pid, options_.method, next_fn_id_);
  // The ids are spent either way: a failed attach may have fired probes.
  next_fn_id_ += static_cast<uint32_t>(sites.size());
  if (!attached) return std::unexpected(attached.error());
  result.attached = attached->sites();
  const auto& now_traced = attached->sites();
  if (now_traced.empty()) return runtime_error("the kernel refused every probe");
  std::string names = "\"" + now_traced.front().symbol + "\"";
  if (now_traced.size() > 1) names += fmt::format(" and {} more", now_traced.size() - 1);
  result.notes.push_back(fmt::format("process {} loaded {}: tracing {} function{} for {}",
                                     options_.pid, path, now_traced.size(),
                                     now_traced.size() == 1 ? "" : "s", names));
  links.adopt(std::move(*attached));
  return {};
}

}  // namespace funclatency
