#include "probe/uprobe_links.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <utility>

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
    return Error{ErrorKind::kBadInput, std::move(what), err,
                 "run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN"};
  }
  if (err == ESRCH) {
    return Error{ErrorKind::kBadInput, std::move(what), err,
                 fmt::format("process {} has exited", pid)};
  }
  return Error{ErrorKind::kRuntime, std::move(what), err, {}};
}

// One kind of probe: which program, and whether it is a return probe.
enum class ProbeKind { kEntry, kReturn, kRetInstruction };

bpf_program* program_of(const BpfObject& object, ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kEntry:
      return object.entry_program();
    case ProbeKind::kReturn:
      return object.return_program();
    case ProbeKind::kRetInstruction:
      break;
  }
  return object.exit_program();
}

const char* name_of(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kEntry:
      return "uprobe";
    case ProbeKind::kReturn:
      return "uretprobe";
    case ProbeKind::kRetInstruction:
      break;
  }
  return "ret-instruction uprobe";
}

struct ProbePoint {
  uint64_t offset;
  uint64_t cookie;
  const ProbeSite* site;
};

}  // namespace

Result<UprobeLinks> UprobeLinks::attach(const BpfObject& object, std::span<const ProbeSite> sites,
                                        std::span<const ProbePlan> plans, std::optional<int> pid,
                                        AttachMethod method) {
  // Every probe point, grouped by file and kind: a uprobe_multi link covers
  // one file and one program.
  std::map<std::pair<std::string, ProbeKind>, std::vector<ProbePoint>> groups;
  UprobeLinks result;
  for (uint32_t fn_id = 0; fn_id < sites.size(); fn_id++) {
    const ProbeSite& site = sites[fn_id];
    const ProbePlan& plan = plans[fn_id];
    uint64_t entry = site.file_offset + plan.entry_skip;
    groups[{site.binary, ProbeKind::kEntry}].push_back({entry, fn_id, &site});
    if (plan.use_ret_instructions) {
      for (uint64_t ret : plan.ret_file_offsets) {
        groups[{site.binary, ProbeKind::kRetInstruction}].push_back({ret, fn_id, &site});
      }
    } else {
      groups[{site.binary, ProbeKind::kReturn}].push_back({entry, fn_id, &site});
    }
    result.sites_.push_back(AttachedSite{fn_id, site.binary, site.symbol, entry, plan.entry_skip,
                                         plan.exit_description});
  }

  int target_pid = pid.value_or(-1);
  for (const auto& [key, points] : groups) {
    const auto& [binary, kind] = key;
    bpf_program* program = program_of(object, kind);
    bool is_return = kind == ProbeKind::kReturn;
    if (method == AttachMethod::kUprobeMulti) {
      std::vector<uint64_t> offsets, cookies;
      for (const auto& point : points) {
        offsets.push_back(point.offset);
        cookies.push_back(point.cookie);
      }
      auto fd = create_uprobe_multi_link(bpf_program__fd(program), binary, offsets, cookies,
                                         is_return, target_pid);
      if (!fd) {
        return std::unexpected(
            attach_error(fmt::format("attach {} {}s to {}", points.size(), name_of(kind), binary),
                         fd.error().errno_value, target_pid));
      }
      result.links_.push_back(ProbeLink::from_fd(*fd));
      continue;
    }
    for (const auto& point : points) {
      bpf_uprobe_opts opts{};
      opts.sz = sizeof(opts);
      opts.bpf_cookie = point.cookie;
      opts.retprobe = is_return;
      bpf_link* link =
          bpf_program__attach_uprobe_opts(program, target_pid, binary.c_str(), point.offset, &opts);
      if (!link) {
        return std::unexpected(
            attach_error(fmt::format("attach {} to {}:{} at 0x{:x}", name_of(kind), binary,
                                     point.site->symbol, point.offset),
                         errno, target_pid));
      }
      result.links_.push_back(ProbeLink::from_libbpf(link));
    }
  }
  return result;
}

Result<TracingProbes> load_and_attach(LoadOptions options, std::span<const ProbeSite> sites,
                                      std::span<const ProbePlan> plans, std::optional<int> pid) {
  options.uprobe_multi = true;
  auto object = BpfObject::load(options);
  if (object) {
    auto links = UprobeLinks::attach(**object, sites, plans, pid, AttachMethod::kUprobeMulti);
    if (links)
      return TracingProbes{std::move(*object), std::move(*links), AttachMethod::kUprobeMulti};
    int err = links.error().errno_value;
    // Any other failure (a bad file, a dead process) fails the same way below.
    if (err != EINVAL && err != EOPNOTSUPP && err != ENOSYS) return std::unexpected(links.error());
  } else if (object.error().kind == ErrorKind::kBadInput) {
    return std::unexpected(object.error());
  }
  // A kernel without uprobe_multi: one perf-event link per probe.
  options.uprobe_multi = false;
  auto fallback = BpfObject::load(options);
  if (!fallback) return std::unexpected(fallback.error());
  auto links = UprobeLinks::attach(**fallback, sites, plans, pid, AttachMethod::kPerfEvent);
  if (!links) return std::unexpected(links.error());
  return TracingProbes{std::move(*fallback), std::move(*links), AttachMethod::kPerfEvent};
}

}  // namespace funclatency
