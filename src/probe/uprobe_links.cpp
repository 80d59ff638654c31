#include "probe/uprobe_links.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <utility>

#include "probe/privileges.h"
#include "probe/uprobe_multi.h"

namespace funclatency {

ProbeLink& ProbeLink::operator=(ProbeLink&& other) noexcept {
  if (this != &other) {
    reset();
    link_ = std::exchange(other.link_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void ProbeLink::reset() {
  if (link_) bpf_link__destroy(link_);
  if (fd_ >= 0) ::close(fd_);
  link_ = nullptr;
  fd_ = -1;
}

namespace {

Error attach_error(std::string what, int err, int pid) {
  if (err == EPERM || err == EACCES) {
    return Error{ErrorKind::kBadInput, std::move(what), err, privilege_hint()};
  }
  if (err == ESRCH) {
    return Error{ErrorKind::kBadInput, std::move(what), err,
                 fmt::format("process {} has exited", pid)};
  }
  return Error{ErrorKind::kRuntime, std::move(what), err, {}};
}

// One kind of probe: which program, and whether it is a return probe.
enum class ProbeKind { kEntry, kReturn, kRetInstruction, kGoEntry, kGoRetInstruction };

bpf_program* program_of(const BpfObject& object, ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kEntry:
      return object.entry_program();
    case ProbeKind::kReturn:
      return object.return_program();
    case ProbeKind::kRetInstruction:
      return object.exit_program();
    case ProbeKind::kGoEntry:
      return object.go_entry_program();
    case ProbeKind::kGoRetInstruction:
      break;
  }
  return object.go_exit_program();
}

const char* name_of(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kEntry:
    case ProbeKind::kGoEntry:
      return "uprobe";
    case ProbeKind::kReturn:
      return "uretprobe";
    case ProbeKind::kRetInstruction:
    case ProbeKind::kGoRetInstruction:
      break;
  }
  return "ret-instruction uprobe";
}

// The kernel's answer for an instruction uprobes cannot handle.
constexpr int kErrnoNotSupported = 524;  // ENOTSUPP, kernel-internal

bool refused_by_kernel(int err) {
  return err == kErrnoNotSupported || err == ENOEXEC;
}

struct ProbePoint {
  uint64_t offset;
  uint64_t cookie;
  const ProbeSite* site;
};

}  // namespace

namespace {

using ProbeGroups = std::map<std::pair<std::string, ProbeKind>, std::vector<ProbePoint>>;

// Every probe point of the sites not in `skip`, grouped by file and kind: a
// uprobe_multi link covers one file and one program.
ProbeGroups group_probe_points(std::span<const ProbeSite> sites, std::span<const ProbePlan> plans,
                               uint32_t first_fn_id, const std::map<uint32_t, std::string>& skip) {
  ProbeGroups groups;
  for (uint32_t index = 0; index < sites.size(); index++) {
    const uint32_t fn_id = first_fn_id + index;
    if (skip.contains(fn_id)) continue;
    const ProbeSite& site = sites[index];
    const ProbePlan& plan = plans[index];
    uint64_t entry = site.file_offset + plan.entry_skip;
    const bool go = plan.goroutine_keyed;
    groups[{site.openable_path(), go ? ProbeKind::kGoEntry : ProbeKind::kEntry}].push_back(
        {entry, fn_id, &site});
    if (plan.use_ret_instructions) {
      const ProbeKind exit = go ? ProbeKind::kGoRetInstruction : ProbeKind::kRetInstruction;
      for (uint64_t ret : plan.ret_file_offsets) {
        groups[{site.openable_path(), exit}].push_back({ret, fn_id, &site});
      }
    } else {
      groups[{site.openable_path(), ProbeKind::kReturn}].push_back({entry, fn_id, &site});
    }
  }
  return groups;
}

std::string refusal(ProbeKind kind, uint64_t offset) {
  return fmt::format("the kernel cannot place a {} at 0x{:x}", name_of(kind), offset);
}

// One uprobe_multi link for a group; when the kernel refuses a point, which
// fails the whole link, finds the refused points one at a time instead.
Result<std::optional<ProbeLink>> attach_multi(bpf_program* program, const std::string& binary,
                                              ProbeKind kind, const std::vector<ProbePoint>& points,
                                              int pid, std::map<uint32_t, std::string>& refused) {
  const bool is_return = kind == ProbeKind::kReturn;
  std::vector<uint64_t> offsets, cookies;
  for (const auto& point : points) {
    offsets.push_back(point.offset);
    cookies.push_back(point.cookie);
  }
  auto fd =
      create_uprobe_multi_link(bpf_program__fd(program), binary, offsets, cookies, is_return, pid);
  if (fd) return std::optional<ProbeLink>(ProbeLink::from_fd(*fd));
  int err = fd.error().errno_value;
  if (!refused_by_kernel(err)) {
    return std::unexpected(attach_error(
        fmt::format("attach {} {}s to {}", points.size(), name_of(kind), binary), err, pid));
  }
  for (const auto& point : points) {
    uint64_t offset = point.offset, cookie = point.cookie;
    auto single = create_uprobe_multi_link(bpf_program__fd(program), binary, {&offset, 1},
                                           {&cookie, 1}, is_return, pid);
    if (single) {
      ::close(*single);
    } else if (refused_by_kernel(single.error().errno_value)) {
      refused.emplace(point.cookie, refusal(kind, point.offset));
    }
  }
  return std::optional<ProbeLink>();
}

// One perf-event uprobe per point of a group (kernels without uprobe_multi).
Result<void> attach_each(bpf_program* program, const std::string& binary, ProbeKind kind,
                         const std::vector<ProbePoint>& points, int pid,
                         std::vector<ProbeLink>& links, std::map<uint32_t, std::string>& refused) {
  for (const auto& point : points) {
    bpf_uprobe_opts opts{};
    opts.sz = sizeof(opts);
    opts.bpf_cookie = point.cookie;
    opts.retprobe = kind == ProbeKind::kReturn;
    bpf_link* link =
        bpf_program__attach_uprobe_opts(program, pid, binary.c_str(), point.offset, &opts);
    if (link) {
      links.push_back(ProbeLink::from_libbpf(link));
      continue;
    }
    int err = errno;
    if (refused_by_kernel(err)) {
      refused.emplace(point.cookie, refusal(kind, point.offset));
      continue;
    }
    return std::unexpected(attach_error(fmt::format("attach {} to {}:{} at 0x{:x}", name_of(kind),
                                                    binary, point.site->symbol, point.offset),
                                        err, pid));
  }
  return {};
}

}  // namespace

Result<void> UprobeLinks::attach_pass(const BpfObject& object, std::span<const ProbeSite> sites,
                                      std::span<const ProbePlan> plans, int pid,
                                      AttachMethod method, uint32_t first_fn_id,
                                      const std::map<uint32_t, std::string>& skip,
                                      std::map<uint32_t, std::string>& refused) {
  for (const auto& [key, points] : group_probe_points(sites, plans, first_fn_id, skip)) {
    const auto& [binary, kind] = key;
    bpf_program* program = program_of(object, kind);
    if (method == AttachMethod::kPerfEvent) {
      auto attached = attach_each(program, binary, kind, points, pid, links_, refused);
      if (!attached) return attached;
      continue;
    }
    auto link = attach_multi(program, binary, kind, points, pid, refused);
    if (!link) return std::unexpected(link.error());
    if (*link) links_.push_back(std::move(**link));
  }
  return {};
}

Result<UprobeLinks> UprobeLinks::attach(const BpfObject& object, std::span<const ProbeSite> sites,
                                        std::span<const ProbePlan> plans, std::optional<int> pid,
                                        AttachMethod method, uint32_t first_fn_id) {
  UprobeLinks result;
  int target_pid = pid.value_or(-1);
  // Functions the planner refused are left out from the start.
  std::map<uint32_t, std::string> planned_out;
  for (uint32_t index = 0; index < plans.size(); index++) {
    if (!plans[index].refused.empty()) {
      planned_out.emplace(first_fn_id + index, plans[index].refused);
    }
  }
  std::map<uint32_t, std::string> refused = planned_out;
  auto first = result.attach_pass(object, sites, plans, target_pid, method, first_fn_id,
                                  planned_out, refused);
  if (!first) return std::unexpected(first.error());
  if (refused.size() > planned_out.size()) {
    // Again without the refused functions, so no function is half-probed.
    result.links_.clear();
    std::map<uint32_t, std::string> again;
    auto second =
        result.attach_pass(object, sites, plans, target_pid, method, first_fn_id, refused, again);
    if (!second) return std::unexpected(second.error());
    if (!again.empty())
      return runtime_error("attach probes: the kernel refused a probe it took before");
  }
  if (refused.size() == sites.size() && !sites.empty()) {
    const auto& [fn_id, reason] = *refused.begin();
    const ProbeSite& site = sites[fn_id - first_fn_id];
    return bad_input(fmt::format("cannot probe {} in {}: {}", site.symbol, site.binary, reason),
                     plans[fn_id - first_fn_id].refused.empty()
                         ? "uprobes cannot take this function's first instruction"
                         : "");
  }
  for (uint32_t index = 0; index < sites.size(); index++) {
    const uint32_t fn_id = first_fn_id + index;
    const ProbeSite& site = sites[index];
    const ProbePlan& plan = plans[index];
    if (auto it = refused.find(fn_id); it != refused.end()) {
      result.dropped_.push_back(DroppedFunction{fn_id, site.symbol, it->second});
      continue;
    }
    result.sites_.push_back(AttachedSite{fn_id, site.binary, site.symbol,
                                         site.file_offset + plan.entry_skip, plan.entry_skip,
                                         plan.entry_description, plan.exit_description});
  }
  return result;
}

void UprobeLinks::adopt(UprobeLinks&& more) {
  for (auto& link : more.links_) links_.push_back(std::move(link));
  sites_.insert(sites_.end(), more.sites_.begin(), more.sites_.end());
  dropped_.insert(dropped_.end(), more.dropped_.begin(), more.dropped_.end());
  more.links_.clear();
}

TracingProbes::~TracingProbes() {
  links.detach_all();
  tracepoint_links.clear();
}

namespace {

// --cpu-split: the sched_switch program, attached before any probe so the
// first call already sees its switches.
Result<std::vector<ProbeLink>> attach_tracepoints(const BpfObject& object) {
  std::vector<ProbeLink> links;
  if (!object.options().cpu_split) return links;
  bpf_link* link = bpf_program__attach(object.sched_switch_program());
  if (!link) {
    return runtime_error("attach the sched_switch tracepoint program (tp_btf) for --cpu-split",
                         errno);
  }
  links.push_back(ProbeLink::from_libbpf(link));
  return links;
}

// Attaches every plan and the tracepoints the options ask for.
Result<TracingProbes> attach_all(std::unique_ptr<BpfObject> object,
                                 std::span<const ProbeSite> sites, std::span<const ProbePlan> plans,
                                 std::optional<int> pid, AttachMethod method) {
  auto tracepoints = attach_tracepoints(*object);
  if (!tracepoints) return std::unexpected(tracepoints.error());
  auto links = UprobeLinks::attach(*object, sites, plans, pid, method);
  if (!links) return std::unexpected(links.error());
  TracingProbes probes(std::move(object), std::move(*links), method);
  probes.tracepoint_links = std::move(*tracepoints);
  return probes;
}

}  // namespace

Result<TracingProbes> load_and_attach(LoadOptions options, std::span<const ProbeSite> sites,
                                      std::span<const ProbePlan> plans, std::optional<int> pid) {
  // The programs and per-function settings the plans need, on top of what
  // the caller asked for (room for functions attached later).
  options.function_goid_offset.resize(plans.size(), 0);
  for (size_t fn_id = 0; fn_id < plans.size(); fn_id++) {
    const ProbePlan& plan = plans[fn_id];
    if (!plan.refused.empty()) continue;
    if (plan.goroutine_keyed) {
      options.go_programs = true;
      options.function_goid_offset[fn_id] = plan.goid_offset;
    } else {
      (plan.use_ret_instructions ? options.exit_program : options.return_program) = true;
    }
  }
  options.uprobe_multi = true;
  auto object = BpfObject::load(options);
  if (object) {
    auto probes = attach_all(std::move(*object), sites, plans, pid, AttachMethod::kUprobeMulti);
    if (probes) return probes;
    int err = probes.error().errno_value;
    // Any other failure (a bad file, a dead process) fails the same way below.
    if (err != EINVAL && err != EOPNOTSUPP && err != ENOSYS) return std::unexpected(probes.error());
  } else if (object.error().kind == ErrorKind::kBadInput) {
    return std::unexpected(object.error());
  }
  // A kernel without uprobe_multi: one perf-event link per probe.
  options.uprobe_multi = false;
  auto fallback = BpfObject::load(options);
  if (!fallback) return std::unexpected(fallback.error());
  return attach_all(std::move(*fallback), sites, plans, pid, AttachMethod::kPerfEvent);
}

}  // namespace funclatency
