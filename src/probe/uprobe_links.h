// Attached probes as RAII objects: a link detaches when it is destroyed, so
// an error or an exit path can never leave a probe behind.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "probe/bpf_object.h"
#include "probe/probe_plan.h"
#include "symbols/probe_site.h"

struct bpf_link;

namespace funclatency {

// A libbpf link or a bare link fd (uprobe_multi links libbpf 1.1 cannot make).
class ProbeLink {
 public:
  static ProbeLink from_libbpf(bpf_link* link) { return ProbeLink(link, -1); }
  // Takes `fd` over.
  static ProbeLink from_fd(int fd) { return ProbeLink(nullptr, fd); }
  void reset() {
    link_.reset();
    fd_.reset();
  }

 private:
  struct LinkDestroy {
    void operator()(bpf_link* link) const;
  };
  ProbeLink(bpf_link* link, int fd) : link_(link), fd_(fd) {}
  std::unique_ptr<bpf_link, LinkDestroy> link_;
  UniqueFd fd_;
};

// Where a function's probes went, for -v.
struct AttachedSite {
  uint32_t fn_id = 0;
  std::string binary;
  std::string symbol;
  uint64_t offset = 0;  // file offset the entry probe sits at
  uint32_t entry_skip = 0;
  std::string entry_description;  // where in the function, when not at its first byte
  std::string exit_description;   // how calls are ended
};

enum class AttachMethod { kUprobeMulti, kPerfEvent };

// A function left out because the kernel refused a probe on it (uprobes
// cannot take some instructions, e.g. VEX-encoded ones, as the probed one).
struct DroppedFunction {
  uint32_t fn_id = 0;
  std::string symbol;
  std::string reason;
};

class UprobeLinks {
 public:
  // Attaches the probes `plans[i]` places to site i, whose function id (the
  // attach cookie) is first_fn_id + i. A function the kernel refuses to probe
  // is left out (dropped()); when every one is, that is an error. On failure
  // everything attached so far is detached before returning.
  static Result<UprobeLinks> attach(const BpfObject& object, std::span<const ProbeSite> sites,
                                    std::span<const ProbePlan> plans, std::optional<int> pid,
                                    AttachMethod method, uint32_t first_fn_id = 0);
  UprobeLinks() = default;
  UprobeLinks(UprobeLinks&&) = default;
  UprobeLinks& operator=(UprobeLinks&&) = default;
  ~UprobeLinks();  // detach_all(): the entries first
  // Takes over the links (and sites) of `more`, attached later.
  void adopt(UprobeLinks&& more);
  const std::vector<AttachedSite>& sites() const { return sites_; }
  const std::vector<DroppedFunction>& dropped() const { return dropped_; }
  size_t link_count() const { return entry_links_.size() + exit_links_.size(); }
  // Closes every link: every entry probe's first, then the exits'. A call
  // that enters while its exit probe is already gone would stay on its
  // thread's shadow stack, and the thread's next traced call would count it
  // lost though it returned; with the entries gone first, a call in flight
  // either reaches its exit probe (counted) or is left out, never lost.
  // Each close waits for RCU grace periods (tens of ms), so links of a kind
  // are closed from several threads at once: their waits overlap.
  void detach_all();

 private:
  // One pass over every probe point: functions in `refused` are left out,
  // and a function one of whose probes the kernel refuses is added to it
  // and left out whole (its probes attached before are taken out again).
  Result<void> attach_pass(const BpfObject& object, std::span<const ProbeSite> sites,
                           std::span<const ProbePlan> plans, int pid, AttachMethod method,
                           uint32_t first_fn_id, std::map<uint32_t, std::string>& refused);

  std::vector<ProbeLink> entry_links_;
  std::vector<ProbeLink> exit_links_;  // return and ret-instruction probes
  std::vector<AttachedSite> sites_;
  std::vector<DroppedFunction> dropped_;
};

// The BPF object with every probe attached: uprobe_multi links where the
// kernel has them, one perf-event link per probe otherwise. The links go
// before the object (the destructor says so, not just member order): no
// probe outlives the programs it runs.
struct TracingProbes {
  TracingProbes(std::unique_ptr<BpfObject> object, UprobeLinks links, AttachMethod method)
      : object(std::move(object)), links(std::move(links)), method(method) {}
  TracingProbes(TracingProbes&&) = default;
  TracingProbes& operator=(TracingProbes&&) = delete;
  ~TracingProbes();
  // Detaches the uprobes (entries first), then the tracepoints: the thread-exit
  // program counts the frames of a thread that ends inside traced calls
  // lost, and once the exits are gone a frame left is a call that was in
  // flight, not one lost.
  void detach();

  std::unique_ptr<BpfObject> object;
  UprobeLinks links;
  AttachMethod method = AttachMethod::kUprobeMulti;
  std::vector<ProbeLink> tracepoint_links;  // thread exit; --cpu-split: sched_switch
};

// Loads the BPF object with the programs `plans` need (plus those `options`
// asks for) and attaches every plan. Plans the planner refused are left out
// as dropped().
Result<TracingProbes> load_and_attach(LoadOptions options, std::span<const ProbeSite> sites,
                                      std::span<const ProbePlan> plans, std::optional<int> pid);

}  // namespace funclatency
