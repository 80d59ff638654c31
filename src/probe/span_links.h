// Why: a span's two points are probed by their own programs (fl_span_start,
// fl_span_end), one perf-event link per probe, the cookie the span's index.
// The end points attach before the starts and detach after them, so no span
// starts that its end probe could not see.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/error.h"
#include "probe/bpf_object.h"
#include "probe/probe_plan.h"
#include "probe/uprobe_links.h"
#include "symbols/probe_site.h"

namespace funclatency {

// One point of a span, resolved and planned.
struct SpanProbe {
  uint32_t span_index = 0;
  bool at_return = false;
  ProbeSite site;
  ProbePlan plan;
};

struct SpanLinks {
  std::vector<ProbeLink> starts;
  std::vector<ProbeLink> ends;
  SpanLinks() = default;
  SpanLinks(SpanLinks&&) = default;
  SpanLinks& operator=(SpanLinks&&) = default;
  ~SpanLinks() { detach_all(); }
  // The starts first: a span in flight either ends (counted) or stays open.
  void detach_all() {
    starts.clear();
    ends.clear();
  }
};

// Attaches every start and end (ends first). `pid` -1: every process.
Result<SpanLinks> attach_span_probes(const BpfObject& object, std::span<const SpanProbe> starts,
                                     std::span<const SpanProbe> ends, int pid);

}  // namespace funclatency
