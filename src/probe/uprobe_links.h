// Attached uprobe/uretprobe pairs as RAII objects: a link detaches when it is
// destroyed, so an error or an exit path can never leave a probe behind.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "probe/bpf_object.h"
#include "symbols/probe_site.h"

struct bpf_link;

namespace funclatency {

class BpfLink {
 public:
  explicit BpfLink(bpf_link* link) : link_(link) {}
  BpfLink(BpfLink&& other) noexcept : link_(std::exchange(other.link_, nullptr)) {}
  BpfLink& operator=(BpfLink&& other) noexcept;
  BpfLink(const BpfLink&) = delete;
  BpfLink& operator=(const BpfLink&) = delete;
  ~BpfLink() { reset(); }
  void reset();

 private:
  bpf_link* link_;
};

// Where a function's probes went, for -v.
struct AttachedSite {
  uint32_t fn_id = 0;
  std::string binary;
  std::string symbol;
  uint64_t offset = 0;  // file offset the probes sit at
  uint32_t entry_skip = 0;
};

class UprobeLinks {
 public:
  // Attaches an entry and a return probe to every site; the site's index is
  // its function id (the attach cookie). On failure everything attached so
  // far is detached before returning.
  static Result<UprobeLinks> attach(const BpfObject& object, std::span<const ProbeSite> sites,
                                    std::optional<int> pid);
  const std::vector<AttachedSite>& sites() const { return sites_; }
  void detach_all() { links_.clear(); }

 private:
  std::vector<BpfLink> links_;
  std::vector<AttachedSite> sites_;
};

}  // namespace funclatency
