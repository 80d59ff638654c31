#include "probe/uprobe_links.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <string_view>
#include <utility>

#include "probe/tracing_capabilities.h"
#include "probe/uprobe_multi.h"

namespace funclatency {

void ProbeLink::LinkDestroy::operator()(bpf_link* link) const {
  bpf_link__destroy(link);
}

namespace {

// `syscall`: the call that made the link (uprobe_multi links: bpf(); the
// perf-event fallback: perf_event_open()), for a refusal's hint.
Error attach_error(std::string what, int err, int pid, std::string_view syscall = "bpf()") {
  if (err == EPERM || err == EACCES) {
    return Error{ErrorKind::kBadInput, std::move(what), err, privilege_hint(syscall)};
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

bool is_entry(ProbeKind kind) {
  return kind == ProbeKind::kEntry || kind == ProbeKind::kGoEntry;
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

// A return probe's breakpoint sits on the function's entry instruction, as
// an entry probe's does: the kernel refuses it for that instruction, and
// the message names that probe (exits are attached first).
std::string refusal(ProbeKind kind, uint64_t offset) {
  return fmt::format("the kernel cannot place a {} at 0x{:x}",
                     name_of(kind == ProbeKind::kReturn ? ProbeKind::kEntry : kind), offset);
}

// A link attached in this pass and the points it holds: a function refused
// later (at another of its points) is taken out of it again.
struct PassLink {
  ProbeLink link;
  std::string binary;
  ProbeKind kind;
  std::vector<ProbePoint> points;
};

Result<int> create_multi(bpf_program* program, const std::string& binary, ProbeKind kind,
                         std::span<const ProbePoint> points, int pid) {
  std::vector<uint64_t> offsets, cookies;
  offsets.reserve(points.size());
  cookies.reserve(points.size());
  for (const auto& point : points) {
    offsets.push_back(point.offset);
    cookies.push_back(point.cookie);
  }
  return create_uprobe_multi_link(bpf_program__fd(program), binary, offsets, cookies,
                                  kind == ProbeKind::kReturn, pid);
}

// uprobe_multi links for `points`. The kernel refuses a whole link for one
// point it cannot take, and every failed or closed link waits for an RCU
// tasks-trace grace period (tens of ms), so refused points are found by
// bisection: a half that attaches is kept as a link, a half that fails is
// split again, a single point that fails is refused. r refused points among
// n cost ~2 r log2(n) attempts and leave ~r log2(n) links, not n of each.
// `known_refused`: the kernel already refused these points as one link.
// True when every point went into one link.
Result<bool> attach_bisecting(bpf_program* program, const std::string& binary, ProbeKind kind,
                              std::span<const ProbePoint> points, int pid, bool known_refused,
                              std::map<uint32_t, std::string>& refused,
                              std::vector<PassLink>& links) {
  if (points.empty()) return true;
  if (!known_refused || points.size() == 1) {
    auto fd = create_multi(program, binary, kind, points, pid);
    if (fd) {
      links.push_back({ProbeLink::from_fd(*fd), binary, kind, {points.begin(), points.end()}});
      return true;
    }
    const int err = fd.error().errno_value;
    if (!refused_by_kernel(err)) {
      return std::unexpected(attach_error(
          fmt::format("attach {} {}s to {}", points.size(), name_of(kind), binary), err, pid));
    }
    if (points.size() == 1) {
      refused.emplace(points[0].cookie, refusal(kind, points[0].offset));
      return false;
    }
  }
  const size_t half = points.size() / 2;
  auto first =
      attach_bisecting(program, binary, kind, points.first(half), pid, false, refused, links);
  if (!first) return first;
  // The whole failed; when the first half went in whole, the second half
  // holds a refused point: split it without trying it whole.
  auto second =
      attach_bisecting(program, binary, kind, points.subspan(half), pid, *first, refused, links);
  if (!second) return second;
  return false;
}

// One perf-event uprobe per point of a group (kernels without uprobe_multi).
Result<void> attach_each(bpf_program* program, const std::string& binary, ProbeKind kind,
                         std::span<const ProbePoint> points, int pid,
                         std::map<uint32_t, std::string>& refused, std::vector<PassLink>& links) {
  for (const auto& point : points) {
    bpf_uprobe_opts opts{};
    opts.sz = sizeof(opts);
    opts.bpf_cookie = point.cookie;
    opts.retprobe = kind == ProbeKind::kReturn;
    bpf_link* link =
        bpf_program__attach_uprobe_opts(program, pid, binary.c_str(), point.offset, &opts);
    if (link) {
      links.push_back({ProbeLink::from_libbpf(link), binary, kind, {point}});
      continue;
    }
    int err = errno;
    if (refused_by_kernel(err)) {
      refused.emplace(point.cookie, refusal(kind, point.offset));
      continue;
    }
    return std::unexpected(attach_error(fmt::format("attach {} to {}:{} at 0x{:x}", name_of(kind),
                                                    binary, point.site->symbol, point.offset),
                                        err, pid, "perf_event_open()"));
  }
  return {};
}

// A link that holds points of a function refused after it was attached (at
// another of its points) is made again without them, so that no function
// stays half-probed.
Result<void> drop_refused_points(const BpfObject& object, std::vector<PassLink>& links,
                                 const std::map<uint32_t, std::string>& refused, int pid) {
  for (auto& pass_link : links) {
    auto& points = pass_link.points;
    auto kept = std::partition(points.begin(), points.end(), [&](const ProbePoint& p) {
      return !refused.contains(static_cast<uint32_t>(p.cookie));
    });
    if (kept == points.end()) continue;
    points.erase(kept, points.end());
    pass_link.link.reset();
    if (points.empty()) continue;
    // A perf-event link holds one point (now gone): what is left is of a
    // uprobe_multi link.
    auto fd = create_multi(program_of(object, pass_link.kind), pass_link.binary, pass_link.kind,
                           points, pid);
    if (!fd) {
      const int err = fd.error().errno_value;
      if (refused_by_kernel(err)) {
        return runtime_error("attach probes: the kernel refused a probe it took before", err);
      }
      return std::unexpected(attach_error(fmt::format("attach {} {}s to {}", points.size(),
                                                      name_of(pass_link.kind), pass_link.binary),
                                          err, pid));
    }
    pass_link.link = ProbeLink::from_fd(*fd);
  }
  return {};
}

// The points of functions not refused so far.
std::vector<ProbePoint> without_refused(const std::vector<ProbePoint>& points,
                                        const std::map<uint32_t, std::string>& refused) {
  std::vector<ProbePoint> kept;
  kept.reserve(points.size());
  for (const auto& point : points) {
    if (!refused.contains(static_cast<uint32_t>(point.cookie))) kept.push_back(point);
  }
  return kept;
}

// Whether x86 uprobes likely refuse the instruction at a probe point: one
// with a LOCK or ES/CS/SS/DS segment prefix (the kernel's is_prefix_bad), or
// a VEX/EVEX-encoded one (the kernel checks its opcode byte against the
// one-byte opcode table, where most are refused: vmovd, vpxor, vmovdqu; not
// vzeroupper). Only a hint of what to try alone: the kernel's answer decides.
bool likely_refused(const ProbePoint& point) {
  if (!point.site || !point.site->file) return false;
  constexpr size_t kMaxInstruction = 15;
  for (uint8_t byte : point.site->file->bytes_at(point.offset, kMaxInstruction)) {
    switch (byte) {
      case 0xf0:  // lock
      case 0x26:  // es
      case 0x2e:  // cs
      case 0x36:  // ss
      case 0x3e:  // ds
      case 0xc4:  // VEX (3 bytes), VEX (2 bytes), EVEX: in 64-bit code
      case 0xc5:
      case 0x62:
        return true;
      case 0x64:  // fs, gs, operand and address size, rep/repne: more prefixes may follow
      case 0x65:
      case 0x66:
      case 0x67:
      case 0xf2:
      case 0xf3:
        continue;
      default:
        return false;
    }
  }
  return false;
}

// Calls work(0) ... work(n - 1) from up to kMaxThreads threads at once
// (the caller's among them), for syscalls that wait for RCU grace periods:
// waits in several threads overlap. Returns when every call has returned.
void for_each_at_once(size_t n, const std::function<void(size_t)>& work) {
  constexpr size_t kMaxThreads = 16;
  const size_t lanes = std::min(n, kMaxThreads);
  std::vector<std::jthread> threads;  // joined on return
  for (size_t lane = 1; lane < lanes; lane++) {
    try {
      threads.emplace_back([&work, n, lane, lanes] {
        for (size_t i = lane; i < n; i += lanes) work(i);
      });
    } catch (const std::system_error&) {
      break;  // no thread: the caller's takes its share
    }
  }
  // Lane 0, and the lanes of threads that could not start.
  for (size_t i = 0; i < n; i++) {
    if (i % lanes == 0 || i % lanes > threads.size()) work(i);
  }
}

// A point the kernel likely refuses, to be tried in a link of its own.
struct Suspect {
  std::string binary;
  ProbeKind kind;
  ProbePoint point;
};

// A link for each suspect, all at once: a refused one costs grace periods,
// and their waits overlap.
Result<void> attach_singly(const BpfObject& object, const std::vector<Suspect>& suspects, int pid,
                           std::map<uint32_t, std::string>& refused, std::vector<PassLink>& links) {
  std::vector<Result<int>> created(suspects.size());
  for_each_at_once(suspects.size(), [&](size_t i) {
    const Suspect& suspect = suspects[i];
    created[i] = create_multi(program_of(object, suspect.kind), suspect.binary, suspect.kind,
                              {&suspect.point, 1}, pid);
  });
  std::optional<Error> failure;
  for (size_t i = 0; i < suspects.size(); i++) {
    const Suspect& suspect = suspects[i];
    if (created[i]) {
      links.push_back(
          {ProbeLink::from_fd(*created[i]), suspect.binary, suspect.kind, {suspect.point}});
    } else if (refused_by_kernel(created[i].error().errno_value)) {
      refused.emplace(suspect.point.cookie, refusal(suspect.kind, suspect.point.offset));
    } else if (!failure) {
      failure = attach_error(fmt::format("attach a {} to {} at 0x{:x}", name_of(suspect.kind),
                                         suspect.binary, suspect.point.offset),
                             created[i].error().errno_value, pid);
    }
  }
  if (failure) return std::unexpected(*failure);
  return {};
}

// uprobe_multi links for every group: the points the kernel likely refuses
// first, each alone (a refusal then costs one failed link, and the
// function's other points are never attached), then the rest of each group
// in one link, bisected if the kernel refuses a point the check did not
// foresee.
Result<void> attach_multi(const BpfObject& object, const ProbeGroups& groups, int pid,
                          std::map<uint32_t, std::string>& refused, std::vector<PassLink>& links) {
  std::vector<Suspect> suspects;
  ProbeGroups rest;
  for (const auto& [key, points] : groups) {
    for (const auto& point : points) {
      if (refused.contains(static_cast<uint32_t>(point.cookie))) continue;
      if (likely_refused(point)) {
        suspects.push_back({key.first, key.second, point});
      } else {
        rest[key].push_back(point);
      }
    }
  }
  auto singly = attach_singly(object, suspects, pid, refused, links);
  if (!singly) return singly;
  for (const auto& [key, points] : rest) {
    const auto& [binary, kind] = key;
    auto attached = attach_bisecting(program_of(object, kind), binary, kind,
                                     without_refused(points, refused), pid, false, refused, links);
    if (!attached) return std::unexpected(attached.error());
  }
  return {};
}

}  // namespace

Result<void> UprobeLinks::attach_pass(const BpfObject& object, std::span<const ProbeSite> sites,
                                      std::span<const ProbePlan> plans, int pid,
                                      AttachMethod method, uint32_t first_fn_id,
                                      std::map<uint32_t, std::string>& refused) {
  std::vector<PassLink> links;
  // Exit probes before entry probes (detach_all() goes the other way): a
  // call that entered while its exit probe was not yet there would stay on
  // its thread's shadow stack and be counted lost by the next call; an exit
  // whose entry was not seen is passed over.
  const auto all = group_probe_points(sites, plans, first_fn_id, refused);
  for (const bool entries : {false, true}) {
    ProbeGroups groups;
    for (const auto& [key, points] : all) {
      if (is_entry(key.second) == entries) groups.emplace(key, points);
    }
    if (method == AttachMethod::kPerfEvent) {
      for (const auto& [key, points] : groups) {
        const auto& [binary, kind] = key;
        auto attached = attach_each(program_of(object, kind), binary, kind,
                                    without_refused(points, refused), pid, refused, links);
        if (!attached) return attached;
      }
    } else {
      auto attached = attach_multi(object, groups, pid, refused, links);
      if (!attached) return attached;
    }
  }
  auto kept = drop_refused_points(object, links, refused, pid);
  if (!kept) return kept;
  for (auto& pass_link : links) {
    if (pass_link.points.empty()) continue;
    (is_entry(pass_link.kind) ? entry_links_ : exit_links_).push_back(std::move(pass_link.link));
  }
  return {};
}

Result<UprobeLinks> UprobeLinks::attach(const BpfObject& object, std::span<const ProbeSite> sites,
                                        std::span<const ProbePlan> plans, std::optional<int> pid,
                                        AttachMethod method, uint32_t first_fn_id) {
  UprobeLinks result;
  int target_pid = pid.value_or(-1);
  // Functions the planner refused are left out from the start.
  std::map<uint32_t, std::string> refused;
  for (uint32_t index = 0; index < plans.size(); index++) {
    if (!plans[index].refused.empty()) refused.emplace(first_fn_id + index, plans[index].refused);
  }
  auto attached =
      result.attach_pass(object, sites, plans, target_pid, method, first_fn_id, refused);
  if (!attached) return std::unexpected(attached.error());
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

UprobeLinks::~UprobeLinks() {
  detach_all();
}

void UprobeLinks::detach_all() {
  for (auto* kind : {&entry_links_, &exit_links_}) {
    std::vector<ProbeLink> links = std::exchange(*kind, {});
    for_each_at_once(links.size(), [&links](size_t i) { links[i].reset(); });
  }
}

void UprobeLinks::adopt(UprobeLinks&& more) {
  auto take = [](std::vector<ProbeLink>& into, std::vector<ProbeLink>& from) {
    for (auto& link : from) into.push_back(std::move(link));
    from.clear();
  };
  take(entry_links_, more.entry_links_);
  take(exit_links_, more.exit_links_);
  sites_.insert(sites_.end(), more.sites_.begin(), more.sites_.end());
  dropped_.insert(dropped_.end(), more.dropped_.begin(), more.dropped_.end());
}

TracingProbes::~TracingProbes() {
  detach();
}

void TracingProbes::detach() {
  links.detach_all();
  tracepoint_links.clear();
}

namespace {

// The thread-exit program (a thread that ends inside traced calls has them
// counted lost), and with --cpu-split the sched_switch program: attached
// before any probe so the first call already sees its switches.
Result<std::vector<ProbeLink>> attach_tracepoints(const BpfObject& object) {
  std::vector<ProbeLink> links;
  if (object.options().thread_exit_program) {
    bpf_link* link = bpf_program__attach(object.thread_exit_program());
    if (!link) {
      return runtime_error(
          "attach the sched_process_exit raw tracepoint program that counts the calls of "
          "threads that end inside them",
          errno);
    }
    links.push_back(ProbeLink::from_libbpf(link));
  }
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
