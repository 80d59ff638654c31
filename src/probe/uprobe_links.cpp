#include "probe/uprobe_links.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <utility>

namespace funclatency {

BpfLink& BpfLink::operator=(BpfLink&& other) noexcept {
  if (this != &other) {
    reset();
    link_ = std::exchange(other.link_, nullptr);
  }
  return *this;
}

void BpfLink::reset() {
  if (link_) bpf_link__destroy(link_);
  link_ = nullptr;
}

namespace {

Result<BpfLink> attach_one(bpf_program* program, const ProbeSite& site, uint64_t offset,
                           uint32_t fn_id, int pid, bool retprobe) {
  bpf_uprobe_opts opts{};
  opts.sz = sizeof(opts);
  opts.bpf_cookie = fn_id;
  opts.retprobe = retprobe;
  bpf_link* link =
      bpf_program__attach_uprobe_opts(program, pid, site.binary.c_str(), offset, &opts);
  if (!link) {
    int err = errno;
    std::string what = fmt::format("attach {} to {}:{} at 0x{:x}", retprobe ? "uretprobe" : "uprobe",
                                   site.binary, site.symbol, offset);
    if (err == EPERM || err == EACCES) {
      return bad_input(what, "run as root, or grant CAP_BPF and CAP_PERFMON", err);
    }
    if (err == ESRCH) return bad_input(what, fmt::format("process {} has exited", pid), err);
    return runtime_error(what, err);
  }
  return BpfLink(link);
}

}  // namespace

Result<UprobeLinks> UprobeLinks::attach(const BpfObject& object, std::span<const ProbeSite> sites,
                                        std::optional<int> pid) {
  UprobeLinks result;
  result.links_.reserve(sites.size() * 2);
  int target_pid = pid.value_or(-1);
  for (uint32_t fn_id = 0; fn_id < sites.size(); fn_id++) {
    const ProbeSite& site = sites[fn_id];
    // Both probes sit after a leading endbr64: it is single-stepped at ~10x
    // the cost of an emulated instruction, and the return address is still
    // at [rsp] after it.
    uint64_t offset = site.file_offset + site.entry_skip;
    for (bool retprobe : {false, true}) {
      bpf_program* program = retprobe ? object.return_program() : object.entry_program();
      auto link = attach_one(program, site, offset, fn_id, target_pid, retprobe);
      if (!link) return std::unexpected(link.error());
      result.links_.push_back(std::move(*link));
    }
    result.sites_.push_back(AttachedSite{fn_id, site.binary, site.symbol, offset, site.entry_skip});
  }
  return result;
}

}  // namespace funclatency
