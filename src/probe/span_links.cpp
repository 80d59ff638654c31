// Why: see span_links.h.
#include "probe/span_links.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

namespace {

// A point's probes: at the entry (after endbr64, or on Go's stack check, as
// the planner places a function's), or at its return: a return probe, or
// each `ret` where the planner says a return probe would break unwinding
// (C++ exceptions) or the program (Go code: always its rets).
Result<void> attach_point(bpf_program* program, const SpanProbe& probe, int pid,
                          std::vector<ProbeLink>& links) {
  struct Place {
    uint64_t offset;
    bool retprobe;
  };
  std::vector<Place> places;
  const uint64_t entry = probe.site.file_offset + probe.plan.entry_skip;
  if (!probe.at_return) {
    places.push_back({entry, false});
  } else if (probe.plan.use_ret_instructions) {
    for (uint64_t ret : probe.plan.ret_file_offsets) places.push_back({ret, false});
  } else if (probe.site.go) {
    // The planner refuses Go code it cannot place ret probes in; a return
    // probe would crash the Go program.
    return bad_input(
        fmt::format("{}: no ret probes for the span's Go return point", probe.site.symbol));
  } else {
    places.push_back({entry, true});
  }
  const std::string& path = probe.site.openable_path();
  for (const Place& place : places) {
    bpf_uprobe_opts opts{};
    opts.sz = sizeof(opts);
    opts.bpf_cookie = probe.span_index | (place.retprobe ? 0 : FL_SPAN_COOKIE_AT_RET);
    opts.retprobe = place.retprobe;
    bpf_link* link =
        bpf_program__attach_uprobe_opts(program, pid, path.c_str(), place.offset, &opts);
    if (!link) {
      return runtime_error(fmt::format("attach the span probe to {}:{} at 0x{:x}", path,
                                       probe.site.symbol, place.offset),
                           errno);
    }
    links.push_back(ProbeLink::from_libbpf(link));
  }
  return {};
}

}  // namespace

Result<SpanLinks> attach_span_probes(const BpfObject& object, std::span<const SpanProbe> starts,
                                     std::span<const SpanProbe> ends, int pid) {
  SpanLinks links;
  for (const auto& end : ends) {
    if (auto ok = attach_point(object.span_end_program(), end, pid, links.ends); !ok) {
      return std::unexpected(ok.error());
    }
  }
  for (const auto& start : starts) {
    if (auto ok = attach_point(object.span_start_program(), start, pid, links.starts); !ok) {
      return std::unexpected(ok.error());
    }
  }
  return links;
}

}  // namespace funclatency
