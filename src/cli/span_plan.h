// The run's stages for spans: each span's points resolved and planned (one
// function each), the BPF object's span settings, the report groups that
// name them. Pure but for the resolver's and planner's file reads.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/config.h"
#include "collect/aggregator.h"
#include "probe/bpf_object.h"
#include "probe/probe_plan.h"
#include "probe/span_links.h"
#include "symbols/elf_symbol_resolver.h"

namespace funclatency {

struct PlannedSpans {
  std::vector<SpanSpec> specs;
  std::vector<SpanProbe> starts;  // starts[i] is span i's
  std::vector<SpanProbe> ends;
};

Result<PlannedSpans> plan_spans(const Config& config, ElfSymbolResolver& resolver,
                                ProbePlanner& planner);
// Span `span` (index `index`) planned in the file at `path` (a followed
// program, "/proc/PID/root/..."): both points are in that file.
Result<std::pair<SpanProbe, SpanProbe>> plan_span_in_file(const Config& config,
                                                          const SpanSpec& span, uint32_t index,
                                                          const std::string& path,
                                                          ElfSymbolResolver& resolver,
                                                          ProbePlanner& planner);
// Span `span`'s settings in the BPF object, as function id `fn_id`.
fl_span_config span_settings(const SpanSpec& span, uint32_t fn_id);
// The spans' function ids follow every function's (late ones' room too):
// adds them to load.num_functions, with their settings.
void add_span_load_options(const Config& config, const PlannedSpans& spans, LoadOptions& load);
// A report group per span, at the function ids load gave them.
void add_span_groups(const Config& config, const PlannedSpans& spans, const LoadOptions& load,
                     std::vector<ReportGroup>& groups, std::vector<uint32_t>& group_of_function);

}  // namespace funclatency
