#include "cli/run_stages.h"

#include <fmt/format.h>

#include <algorithm>

#include "collect/tracing_choices.h"
#include "common/names_table.h"
#include "symbols/target_spec.h"

namespace funclatency {

Result<std::vector<TargetSpec>> parse_targets(const Config& config) {
  std::vector<TargetSpec> specs;
  for (const auto& target : config.targets) {
    auto spec = parse_target(target, config.regex);
    if (!spec) return std::unexpected(spec.error());
    if (spec->binary.empty() && !config.pid) {
      return bad_input(fmt::format("TARGET \"{}\" names no binary", target),
                       "give -p PID, or write BINARY:FUNCTION");
    }
    specs.push_back(std::move(*spec));
  }
  return specs;
}

ResolveOptions resolve_options(const Config& config) {
  ResolveOptions options;
  options.pid = config.pid;
  options.max_matches = config.max_functions;
  return options;
}

namespace {

// What the run asks of each function (--cpu-split, --by retval/argN).
CodeOptions code_options(const Config& config) {
  return {.cpu_split = config.cpu_split,
          .value_source = config.value_series.source,
          .value_index = config.value_series.index,
          .value_rule = config.value_series.rule};
}

}  // namespace

Result<void> refuse_options_code_lacks(const Config& config, std::span<const ProbeSite> sites) {
  const CodeOptions options = code_options(config);
  for (const auto& site : sites) {
    OptionRefusal refusal = refuse_options(options, site.go.has_value());
    if (refusal.reason.empty()) continue;
    return bad_input(fmt::format("{} ({} in {})", refusal.reason, site.symbol, site.binary),
                     refusal.hint);
  }
  return {};
}

namespace {

// Kernel slots by default: one for each function aggregated in the kernel at
// once, up to 64. Functions attached later (--follow, --config, libraries
// awaited) are room for what may come, mostly never hot at once: the
// functions known at start and 16 more. A slot is a histogram per CPU
// (5.8 KB x CPUs); a function without one stays in events mode, every call
// still counted.
uint32_t kernel_slots_for(const Config& config, uint32_t functions_at_start, bool awaiting) {
  constexpr uint32_t kDefaultSlots = 64;
  constexpr uint32_t kLateSlots = 16;
  if (config.kernel_slots) return *config.kernel_slots;
  return awaiting ? std::min(kDefaultSlots, functions_at_start + kLateSlots) : kDefaultSlots;
}

}  // namespace

LoadOptions load_options(const Config& config, const PlannedTargets& targets,
                         const std::optional<Calibration>& calibration) {
  // Functions attached later: of libraries a process loads, or of programs
  // followed into containers.
  const bool awaiting = !targets.waiting.empty() || config.following();
  LoadOptions load;
  load.unit_ns = config.unit_ns;
  load.filter_tgid = config.pid ? static_cast<uint32_t>(*config.pid) : 0;
  load.num_functions =
      static_cast<uint32_t>(targets.sites.size()) + (awaiting ? config.late_functions : 0);
  load.initial_mode = kernel_mode_of(config.mode);
  load.cpu_split = config.cpu_split;
  load.self_time = config.self_time;
  load.series_by = config.series_by;
  load.value_source = config.value_series.source;
  load.value_index = config.value_series.index;
  load.value_rule = config.value_series.rule;
  load.max_series = config.max_series;
  // --mode events never aggregates in the kernel: one slot, not a pool.
  load.kernel_slots =
      config.mode == ModeChoice::kEvents
          ? 1
          : kernel_slots_for(config, static_cast<uint32_t>(targets.sites.size()), awaiting);
  load.go_goroutines = config.go_goroutines;
  // Functions attached later may need either kind of exit; load_and_attach
  // adds the programs the plans at hand need.
  load.return_program = awaiting;
  load.exit_program = awaiting;
  // A followed program may be Go code.
  load.go_programs = config.following();
  const SlowThresholdOptions slow = slow_threshold_options(config);
  // --config: a target may have slow calls of its own, now or after a reload.
  load.slow_calls = slow.any() || !config.config_file.empty();
  load.slow_floors = !config.config_file.empty();
  load.initial_slow_ns = SlowThresholds(0, slow).initial();
  load.slowest_floor_k = slow.slower_than_ns ? 0 : static_cast<uint32_t>(slow.slowest);
  for (const auto& plan : targets.plans) {
    load.function_flags.push_back(plan.fn_flags);
    load.function_subtract_ns.push_back(calibration ? calibration->for_plan(plan) : 0);
  }
  return load;
}

AttachSettings attach_settings(const Config& config, const LoadOptions& load, AttachMethod method,
                               std::optional<Calibration> calibration) {
  AttachSettings settings;
  settings.resolve = resolve_options(config);
  settings.exit_probes = config.exit_probes;
  settings.initial_mode = load.initial_mode;
  settings.method = method;
  settings.subtract_ns = [calibration](const ProbePlan& plan) -> uint64_t {
    return calibration ? calibration->for_plan(plan) : 0;
  };
  return settings;
}

WatchOptions watch_options(const Config& config, const LoadOptions& load, AttachMethod method,
                           uint32_t first_free_fn_id, std::optional<Calibration> calibration) {
  WatchOptions options;
  options.pid = config.pid.value_or(0);
  options.attach = attach_settings(config, load, method, std::move(calibration));
  options.first_free_fn_id = first_free_fn_id;
  return options;
}

std::set<std::pair<std::string, uint64_t>> site_keys(std::span<const ProbeSite> sites) {
  std::set<std::pair<std::string, uint64_t>> keys;
  for (const auto& site : sites) keys.insert({site.binary, site.file_offset});
  return keys;
}

SlowThresholdOptions slow_threshold_options(const Config& config) {
  return {.slowest = config.slowest, .slower_than_ns = config.slower_than_ns};
}

SessionOptions session_options(const Config& config) {
  SessionOptions options;
  options.slow = slow_threshold_options(config);
  options.interval = config.interval;
  options.duration = config.duration;
  options.pid = config.pid;
  options.mode = config.mode;
  options.policy.to_kernel_calls_per_sec = config.auto_threshold;
  options.policy.to_events_calls_per_sec = config.auto_threshold / 4;
  return options;
}

ReportGroups report_groups(const Config& config, std::span<const AttachedSite> traced,
                           uint32_t num_functions) {
  ReportGroups result;
  result.group_of_function.assign(num_functions, kNoGroup);
  for (const auto& site : traced) {
    if (config.merge && !result.groups.empty()) {
      result.group_of_function[site.fn_id] = 0;
      continue;
    }
    result.group_of_function[site.fn_id] = static_cast<uint32_t>(result.groups.size());
    result.groups.push_back({site.symbol, site.binary, config.pid.value_or(0)});
  }
  if (config.merge && traced.size() > 1) {
    result.groups[0].symbol =
        fmt::format("{} functions matching {}", traced.size(), config.targets[0]);
  }
  return result;
}

std::string links_line(size_t link_count, AttachMethod method) {
  return fmt::format(
      "{} links ({})", link_count,
      method == AttachMethod::kUprobeMulti ? "uprobe_multi" : "perf-event uprobes: one per probe");
}

std::string attached_line(const AttachedSite& site) {
  return fmt::format(
      "{}: entry probe at {}:0x{:x}{}; exit: {}", site.symbol, site.binary, site.offset,
      site.entry_description.empty() ? std::string() : " (" + site.entry_description + ")",
      site.exit_description);
}

std::string dropped_line(std::span<const DroppedFunction> dropped) {
  if (dropped.empty()) return {};
  std::string names;
  for (size_t i = 0; i < dropped.size() && i < 5; i++) {
    names += (i ? ", " : "") + dropped[i].symbol;
  }
  if (dropped.size() > 5) names += fmt::format(" and {} more", dropped.size() - 5);
  return fmt::format("skipping {} function{} that cannot be probed (-v says why): {}",
                     dropped.size(), dropped.size() == 1 ? "" : "s", names);
}

namespace {

std::string describe_waiting(std::span<const TargetSpec> waiting) {
  std::string names;
  for (const auto& spec : waiting) {
    names += (names.empty() ? "" : ", ") + spec.binary + ":" + spec.function;
  }
  return names;
}

std::string describe_targets(std::span<const AttachedSite> sites) {
  if (sites.size() == 1) return fmt::format("\"{}\"", sites[0].symbol);
  return fmt::format("\"{}\" and {} more", sites[0].symbol, sites.size() - 1);
}

constexpr NamedValue<ModeChoice> kModeStatements[] = {
    {ModeChoice::kAuto,
     "mode auto: one ring buffer record per call; a function above the auto threshold "
     "switches to in-kernel aggregation"},
    {ModeChoice::kEvents, "mode events: one ring buffer record per call"},
    {ModeChoice::kKernel, "mode kernel: histograms aggregated in the kernel"}};
static_assert(names_every_value(kModeStatements, ModeChoice::kKernel));

}  // namespace

std::string start_banner(const Config& config, std::span<const AttachedSite> traced,
                         std::span<const TargetSpec> pending) {
  const int pid = config.pid.value_or(0);
  std::string spans;
  for (const auto& span : config.spans) spans += (spans.empty() ? "" : ", ") + span.name;
  if (!spans.empty())
    spans = fmt::format(" and span{} {}", config.spans.size() == 1 ? "" : "s", spans);
  if (traced.empty() && pending.empty() && !config.spans.empty()) {
    return fmt::format("Tracing {} ({})... Hit Ctrl-C to end.\n", spans.substr(5),
                       name_in(kModeStatements, config.mode));
  }
  if (traced.empty()) {
    return fmt::format(
        "Waiting for process {} to load the library of {} ({})... Hit Ctrl-C to end.\n", pid,
        describe_waiting(pending), name_in(kModeStatements, config.mode));
  }
  std::string waiting;
  if (!pending.empty()) {
    waiting = fmt::format("; waiting for process {} to load the library of {}", pid,
                          describe_waiting(pending));
  }
  return fmt::format("Tracing {} function{} for {}{}{} ({})... Hit Ctrl-C to end.\n", traced.size(),
                     traced.size() == 1 ? "" : "s", describe_targets(traced), spans, waiting,
                     name_in(kModeStatements, config.mode));
}

std::string follow_banner(const Config& config) {
  std::string text;
  for (const auto& target : config.follow_targets) {
    std::string functions;
    for (const auto& function : target.functions) {
      functions += (functions.empty() ? "" : ", ") + function;
    }
    text +=
        fmt::format("{}{}{} ({}){}", text.empty() ? "" : "; ",
                    target.name.empty() ? "" : target.name + ": ", target.program, functions,
                    target.labels.empty() ? "" : fmt::format(" +{} labels", target.labels.size()));
  }
  for (const auto& span : config.spans) {
    text += fmt::format("{}span {}", text.empty() ? "" : "; ", span.text);
  }
  if (config.check_config) {
    return fmt::format("{}: valid; follows {} target{}{}: {}\n", config.config_file,
                       config.follow_targets.size(), config.follow_targets.size() == 1 ? "" : "s",
                       config.spans.empty() ? ""
                                            : fmt::format(" and {} span{}", config.spans.size(),
                                                          config.spans.size() == 1 ? "" : "s"),
                       text);
  }
  return fmt::format(
      "Following {} into every process that runs it, now or later, in any container ({})... "
      "Hit Ctrl-C to end.\n",
      text, name_in(kModeStatements, config.mode));
}

std::string grace_period_line(std::string_view rcu_expedited) {
  while (!rcu_expedited.empty() && rcu_expedited.back() == '\n') rcu_expedited.remove_suffix(1);
  if (rcu_expedited == "1") {
    return "the node's RCU grace periods are expedited (/sys/kernel/rcu_expedited 1): a new "
           "program file is attached within milliseconds of its exec";
  }
  if (rcu_expedited == "0") {
    return "the node's RCU grace periods are normal (/sys/kernel/rcu_expedited 0): a new program "
           "file's first attach waits for one, so its calls of the first ~10-20 ms after its exec "
           "are not timed; --follow-hold times them, the node's rcu_expedited=1 shortens the "
           "wait (docs/agent.md)";
  }
  return {};
}

std::string never_loaded_line(int pid, std::span<const TargetSpec> pending) {
  return fmt::format("process {} never loaded the library of {}", pid, describe_waiting(pending));
}

std::string format_listing(std::span<const ListedFunction> listed,
                           std::span<const std::optional<ProbePlan>> plans) {
  // The BINARY column is as wide as its longest path, so ENTRY lines up.
  size_t binary_width = std::string_view("BINARY").size();
  for (const auto& function : listed) binary_width = std::max(binary_width, function.binary.size());
  std::string text = fmt::format("{:<40} {:<18} {:>8}  {:<{}}  {}\n", "FUNCTION", "ADDRESS", "SIZE",
                                 "BINARY", binary_width, "ENTRY");
  for (size_t i = 0; i < listed.size(); i++) {
    const ListedFunction& function = listed[i];
    const ProbePlan* plan = i < plans.size() && plans[i] ? &*plans[i] : nullptr;
    std::string refused = plan ? plan->refused : function.refused_reason;
    if (!plan && refused.empty()) refused = "not planned";
    std::string entry =
        refused.empty() ? fmt::format("+{}", plan->entry_skip) : "(not probed: " + refused + ")";
    text += fmt::format("{:<40} 0x{:016x} {:>8}  {:<{}}  {}\n", function.symbol, function.address,
                        function.size, function.binary, binary_width, entry);
  }
  return text;
}

}  // namespace funclatency
