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
      attacher_(options_.attach, options_.first_free_fn_id, resolver, planner) {}

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
  auto attached = attacher_.attach(path, spec, object, options_.pid, options_.pid,
                                   [this](const ProbeSite& site) {
                                     return traced_.insert({site.binary, site.file_offset}).second;
                                   });
  if (!attached) return std::unexpected(attached.error().error);
  for (auto& note : attached->notes) result.notes.push_back(std::move(note));
  const auto& now_traced = attached->links.sites();
  if (now_traced.empty()) return {};
  result.attached = now_traced;
  result.notes.push_back(fmt::format(
      "process {} loaded {}: tracing {} function{} for {}", options_.pid, path, now_traced.size(),
      now_traced.size() == 1 ? "" : "s", attached_names(now_traced)));
  links.adopt(std::move(attached->links));
  return {};
}

}  // namespace funclatency
