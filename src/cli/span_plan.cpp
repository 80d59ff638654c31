// Why: see span_plan.h.
#include "cli/span_plan.h"

#include <fmt/format.h>

#include "cli/run_stages.h"

namespace funclatency {

namespace {

uint32_t value_code(const SpanPoint& point) {
  if (point.value == SpanValue::kReturnValue) return FL_SPAN_VALUE_RET;
  if (point.value == SpanValue::kArgument) return point.arg_index;
  return FL_SPAN_VALUE_NONE;
}

Result<SpanProbe> plan_point(const Config& config, const SpanSpec& span, const SpanPoint& point,
                             uint32_t index, ElfSymbolResolver& resolver, ProbePlanner& planner) {
  TargetSpec target{point.binary, point.function, false};
  auto found = resolver.resolve_detailed(target, resolve_options(config));
  if (!found) {
    Error error = found.error();
    error.context = fmt::format("span {}: {}", span.name, error.context);
    return std::unexpected(std::move(error));
  }
  if (found->sites.empty()) {
    return bad_input(
        fmt::format("span {}: no function {} in {}", span.name, point.function, point.binary));
  }
  for (const auto& other : found->sites) {
    if (other.file_offset != found->sites.front().file_offset) {
      return bad_input(fmt::format("span {}: {} names {} functions in {}", span.name,
                                   point.function, found->sites.size(), point.binary),
                       "a span's point is one function: give its exact (mangled) name");
    }
  }
  SpanProbe probe{.span_index = index, .at_return = point.at_return, .site = found->sites.front()};
  auto plan = planner.plan(probe.site, config.exit_probes);
  if (!plan) return std::unexpected(plan.error());
  if (!plan->refused.empty()) {
    return bad_input(fmt::format("span {}: {} cannot be probed: {}", span.name, probe.site.symbol,
                                 plan->refused));
  }
  probe.plan = std::move(*plan);
  return probe;
}

// A Go span is matched by the goroutine and reads Go's registers; a
// goroutine is no thread, and one ABI's value is not the other's.
Result<void> check_go_points(const SpanSpec& span, const SpanProbe& start, const SpanProbe& end) {
  if (start.site.go.has_value() == end.site.go.has_value()) return {};
  const SpanProbe& go = start.site.go ? start : end;
  const SpanProbe& other = start.site.go ? end : start;
  return bad_input(fmt::format("span {}: {} is Go code and {} is not", span.name, go.site.symbol,
                               other.site.symbol),
                   "both points of a span are Go code or neither is");
}

// What a span over Go code adds to its settings: the goroutine's goid
// offset per point, and which point is an entry on Go's stack check (a
// failed check fires the probe again once morestack has run; a `ret` has
// no such check).
void add_go_settings(const SpanProbe& start, const SpanProbe& end, fl_span_config& settings) {
  if (!start.site.go) return;
  settings.flags |= FL_SPAN_GO;
  settings.start_goid_offset = start.plan.goid_offset;
  settings.end_goid_offset = end.plan.goid_offset;
  const auto checks = [](const SpanProbe& point) {
    return !point.at_return && (point.plan.fn_flags & FL_FN_GO_STACK_CHECK);
  };
  if (checks(start)) settings.flags |= FL_SPAN_START_GO_STACK_CHECK;
  if (checks(end)) settings.flags |= FL_SPAN_END_GO_STACK_CHECK;
}

}  // namespace

Result<PlannedSpans> plan_spans(const Config& config, ElfSymbolResolver& resolver,
                                ProbePlanner& planner) {
  PlannedSpans planned;
  for (uint32_t index = 0; index < config.spans.size(); index++) {
    const SpanSpec& span = config.spans[index];
    auto start = plan_point(config, span, span.start, index, resolver, planner);
    if (!start) return std::unexpected(start.error());
    auto end = plan_point(config, span, span.end, index, resolver, planner);
    if (!end) return std::unexpected(end.error());
    if (auto go = check_go_points(span, *start, *end); !go) return std::unexpected(go.error());
    planned.specs.push_back(span);
    planned.starts.push_back(std::move(*start));
    planned.ends.push_back(std::move(*end));
  }
  return planned;
}

Result<std::pair<SpanProbe, SpanProbe>> plan_span_in_file(const Config& config,
                                                          const SpanSpec& span, uint32_t index,
                                                          const std::string& path,
                                                          ElfSymbolResolver& resolver,
                                                          ProbePlanner& planner) {
  SpanSpec in_file = span;
  in_file.start.binary = path;
  in_file.end.binary = path;
  auto start = plan_point(config, in_file, in_file.start, index, resolver, planner);
  if (!start) return std::unexpected(start.error());
  auto end = plan_point(config, in_file, in_file.end, index, resolver, planner);
  if (!end) return std::unexpected(end.error());
  // A followed span's settings are set before its files are planned
  // (span_settings): they cannot say a point is Go code.
  for (const SpanProbe* point : {&*start, &*end}) {
    if (point->site.go) {
      return bad_input(fmt::format("span {}: {} is Go code", span.name, point->site.symbol),
                       "spans over Go code are traced with --span and -p or a TARGET, not yet "
                       "in followed programs (--follow, --config)");
    }
  }
  return std::pair{std::move(*start), std::move(*end)};
}

fl_span_config span_settings(const SpanSpec& span, uint32_t fn_id) {
  fl_span_config settings{};
  settings.fn_id = fn_id;
  settings.flags =
      (span.by_value() ? FL_SPAN_BY_VALUE : 0u) | (span.any_process ? FL_SPAN_ANY_PROCESS : 0u);
  settings.start_value = value_code(span.start);
  settings.end_value = value_code(span.end);
  return settings;
}

void add_span_load_options(const Config& config, const PlannedSpans& spans, LoadOptions& load) {
  if (spans.specs.empty()) return;
  load.span_first_fn = load.num_functions;
  load.span_capacity = config.span_capacity;
  for (uint32_t index = 0; index < spans.specs.size(); index++) {
    fl_span_config settings = span_settings(spans.specs[index], load.span_first_fn + index);
    add_go_settings(spans.starts[index], spans.ends[index], settings);
    load.spans.push_back(settings);
  }
  load.num_functions += static_cast<uint32_t>(spans.specs.size());
}

void add_span_groups(const Config& config, const PlannedSpans& spans, const LoadOptions& load,
                     std::vector<ReportGroup>& groups, std::vector<uint32_t>& group_of_function) {
  for (uint32_t index = 0; index < spans.specs.size(); index++) {
    const uint32_t fn_id = load.span_first_fn + index;
    if (fn_id >= group_of_function.size()) group_of_function.resize(fn_id + 1, kNoGroup);
    group_of_function[fn_id] = static_cast<uint32_t>(groups.size());
    ReportGroup group{spans.specs[index].name, spans.starts[index].site.binary,
                      config.pid.value_or(0)};
    group.span = true;
    groups.push_back(std::move(group));
  }
}

}  // namespace funclatency
