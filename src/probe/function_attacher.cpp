// Why: see function_attacher.h.
#include "probe/function_attacher.h"

#include <fmt/format.h>

#include "probe/code_options.h"

namespace funclatency {

FunctionAttacher::FunctionAttacher(AttachSettings settings, uint32_t first_free_fn_id,
                                   ElfSymbolResolver& resolver, ProbePlanner& planner)
    : settings_(std::move(settings)),
      next_fn_id_(first_free_fn_id),
      resolver_(resolver),
      planner_(planner) {}

std::expected<AttachedFile, AttachError> FunctionAttacher::attach(
    const std::string& path, const TargetSpec& spec, BpfObject& object, std::optional<int> seen_by,
    std::optional<int> only, const std::function<bool(const ProbeSite&)>& keep,
    const FunctionOptions& options) {
  auto fail = [](AttachFailure reason, Error error) {
    return std::unexpected(AttachError{reason, std::move(error)});
  };
  ResolveOptions resolve = settings_.resolve;
  if (seen_by) resolve.pid = seen_by;
  auto resolution = resolver_.resolve_in_file(path, spec, resolve);
  if (!resolution) return fail(AttachFailure::kNoFunction, resolution.error());
  AttachedFile result;
  std::vector<ProbeSite> sites;
  std::vector<ProbePlan> plans;
  for (auto& site : resolution->sites) {
    if (keep && !keep(site)) continue;
    auto plan = planner_.plan(site, settings_.exit_probes);
    if (!plan) return fail(AttachFailure::kNoFunction, plan.error());
    // Go code in a file attached after the start would need the
    // goroutine-keyed programs this run did not load.
    if (plan->goroutine_keyed && plan->refused.empty() && !object.options().go_programs) {
      plan->refused = "Go code in a file attached after the start is not traced";
    }
    if (plan->refused.empty()) {
      plan->refused = refuse_options(code_options_of(object.options()), site.go.has_value()).reason;
    }
    sites.push_back(std::move(site));
    plans.push_back(std::move(*plan));
  }
  const uint32_t room = free_ids(object);
  if (!sites.empty() && room == 0) {
    return fail(
        AttachFailure::kNoRoom,
        Error{ErrorKind::kRuntime, fmt::format("no room in the maps for {}'s functions", path), 0,
              "raise --late-functions"});
  }
  if (sites.size() > room) {
    result.notes.push_back(
        fmt::format("{} of {}'s {} matching functions are left out: no room in the maps (raise "
                    "--late-functions)",
                    sites.size() - room, path, sites.size()));
    sites.resize(room);
    plans.resize(room);
  }
  if (sites.empty()) return result;
  for (uint32_t i = 0; i < sites.size(); i++) {
    const uint64_t subtract = settings_.subtract_ns ? settings_.subtract_ns(plans[i]) : 0;
    if (settings_.cost_ns) result.cost_ns[next_fn_id_ + i] = settings_.cost_ns(plans[i]);
    if (options.slow) {
      if (auto set = object.set_slow_calls(next_fn_id_ + i, *options.slow); !set) {
        return fail(AttachFailure::kKernelRefused, set.error());
      }
    }
    auto configured =
        object.configure_function(next_fn_id_ + i, options.mode.value_or(settings_.initial_mode),
                                  plans[i].fn_flags | options.extra_flags, subtract,
                                  plans[i].goroutine_keyed ? plans[i].goid_offset : 0);
    if (!configured) return fail(AttachFailure::kKernelRefused, configured.error());
  }
  auto attached = UprobeLinks::attach(object, sites, plans, only, settings_.method, next_fn_id_);
  // The ids are spent either way: a failed attach may have fired probes.
  next_fn_id_ += static_cast<uint32_t>(sites.size());
  if (!attached) return fail(AttachFailure::kKernelRefused, attached.error());
  if (attached->sites().empty()) {
    return fail(AttachFailure::kKernelRefused,
                Error{ErrorKind::kRuntime, "the kernel refused every probe in " + path, 0, {}});
  }
  result.links = std::move(*attached);
  return result;
}

std::string attached_names(const std::vector<AttachedSite>& sites) {
  if (sites.empty()) return {};
  std::string names = "\"" + sites.front().symbol + "\"";
  if (sites.size() > 1) names += fmt::format(" and {} more", sites.size() - 1);
  return names;
}

}  // namespace funclatency
