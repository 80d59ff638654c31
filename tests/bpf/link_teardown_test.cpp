// Destroying the links takes every breakpoint out of the traced process
// while the BPF object and the process both stay alive: the process's code
// reads as the file's again. (The e2e tests can look only after the tool has
// exited, when the kernel removes its probes anyway.) For both attach methods
// and both kinds of exit probe, and for detach_all() and the destructor.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bpf_permission.h"
#include "child_process.h"
#include "probe/bpf_object.h"
#include "probe/probe_plan.h"
#include "probe/uprobe_links.h"
#include "process_memory.h"
#include "symbols/elf_symbol_resolver.h"

namespace funclatency {
namespace {

using namespace std::chrono_literals;
using testing::file_bytes;
using testing::kInt3;
using testing::mapped_bytes;

// target-app calls all three for as long as it runs; cet_op starts with
// endbr64, so its entry probe may sit past the function's first byte.
const std::vector<std::string> kFunctions = {"slow_op", "fast_op", "cet_op"};

enum class Teardown { kDetachAll, kDestroy };

struct TeardownCase {
  AttachMethod method;
  ExitProbeChoice exits;
  Teardown teardown;
};

std::string case_name(const ::testing::TestParamInfo<TeardownCase>& info) {
  const TeardownCase& c = info.param;
  return std::string(c.method == AttachMethod::kUprobeMulti ? "UprobeMulti" : "PerfEvent") +
         (c.exits == ExitProbeChoice::kReturnProbe ? "_Uretprobe" : "_RetInstructions") +
         (c.teardown == Teardown::kDetachAll ? "_DetachAll" : "_Destructor");
}

// One probe the kernel put into the target, by file offset.
struct ProbedPoint {
  std::string binary;
  uint64_t offset;
  std::string what;
};

class LinkTeardown : public ::testing::TestWithParam<TeardownCase> {
 protected:
  void SetUp() override {
    FL_SKIP_WITHOUT_BPF();
    target_.emplace();
    ASSERT_FALSE(target_->path().empty()) << "cannot copy " << TARGET_APP;
    ASSERT_TRUE(target_->ready()) << "target-app did not start: " << target_->output();
  }

  // Every function of kFunctions in the running target, planned with the
  // case's kind of exit.
  void resolve_and_plan() {
    ElfSymbolResolver resolver;
    ProbePlanner planner;
    for (const auto& function : kFunctions) {
      auto found = resolver.resolve(TargetSpec{target_->path(), function}, {.pid = target_->pid()});
      ASSERT_TRUE(found) << found.error().message();
      ASSERT_EQ(found->size(), 1u) << function;
      auto plan = planner.plan(found->front(), GetParam().exits);
      ASSERT_TRUE(plan) << plan.error().message();
      sites_.push_back(found->front());
      plans_.push_back(std::move(*plan));
    }
    // A function that leaves by a tail jump (slow_op, to slow_op.cold) keeps
    // a return probe even when ret probes are asked for; the others do not.
    const bool ret_probes = std::ranges::any_of(
        plans_, [](const ProbePlan& plan) { return !plan.ret_file_offsets.empty(); });
    ASSERT_EQ(ret_probes, GetParam().exits == ExitProbeChoice::kRetInstructions);
  }

  // Where the attached probes sit: entries (and uretprobes) from what the
  // links report, ret-instruction probes from the plans.
  std::vector<ProbedPoint> probed_points(const UprobeLinks& links) const {
    std::vector<ProbedPoint> points;
    for (const auto& site : links.sites()) {
      points.push_back({site.binary, site.offset, site.symbol + " entry"});
      const ProbePlan& plan = plans_.at(site.fn_id);
      if (!plan.use_ret_instructions) continue;
      for (uint64_t ret : plan.ret_file_offsets) {
        points.push_back({site.binary, ret, site.symbol + " ret"});
      }
    }
    return points;
  }

  void expect_breakpoints_in(const std::vector<ProbedPoint>& points) {
    for (const auto& point : points) {
      const auto in_file = file_bytes(point.binary, point.offset, 1);
      const auto in_process = mapped_bytes(target_->pid(), point.binary, point.offset, 1);
      ASSERT_EQ(in_file.size(), 1u) << point.what;
      ASSERT_EQ(in_process.size(), 1u) << point.what << " is not mapped in the target";
      EXPECT_NE(in_file[0], kInt3) << point.what;
      EXPECT_EQ(in_process[0], kInt3)
          << point.what << " at 0x" << std::hex << point.offset << ": no breakpoint while attached";
    }
  }

  // Every byte of every traced function, as in the file.
  void expect_code_as_in_file() {
    for (const auto& site : sites_) {
      const auto in_file = file_bytes(site.binary, site.file_offset, site.size);
      ASSERT_EQ(in_file.size(), site.size) << site.symbol;
      EXPECT_EQ(mapped_bytes(target_->pid(), site.binary, site.file_offset, site.size), in_file)
          << site.symbol << " still differs from the file after its links were destroyed";
    }
  }

  LoadOptions load_options() const {
    LoadOptions options;
    options.filter_tgid = static_cast<uint32_t>(target_->pid());
    options.num_functions = static_cast<uint32_t>(sites_.size());
    for (const auto& plan : plans_) options.function_flags.push_back(plan.fn_flags);
    return options;
  }

  // Tears the links down as the case says; the object stays loaded.
  static void tear_down(UprobeLinks& links, Teardown how) {
    if (how == Teardown::kDetachAll) {
      links.detach_all();
      EXPECT_EQ(links.link_count(), 0u);
    } else {
      UprobeLinks doomed = std::move(links);
    }
  }

  // The whole check, on links attached by either method.
  void check_teardown(const BpfObject& object, UprobeLinks& links) {
    ASSERT_EQ(links.sites().size(), sites_.size()) << "a function was dropped";
    const auto points = probed_points(links);
    ASSERT_NO_FATAL_FAILURE(expect_breakpoints_in(points));
    if (HasFailure()) return;

    tear_down(links, GetParam().teardown);
    EXPECT_EQ(object.num_functions(), sites_.size());  // still loaded
    ASSERT_TRUE(target_->running());
    expect_code_as_in_file();
    // A breakpoint left with no probe behind it would kill the target with
    // SIGTRAP on its next call (it calls each function hundreds of times a
    // second).
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(target_->running()) << "the target died after the links were destroyed";
  }

  std::optional<testing::TargetApp> target_;
  std::vector<ProbeSite> sites_;
  std::vector<ProbePlan> plans_;
};

TEST_P(LinkTeardown, DestroyedLinksRestoreTheTargetsCode) {
  ASSERT_NO_FATAL_FAILURE(resolve_and_plan());
  const std::optional<int> pid = target_->pid();
  if (GetParam().method == AttachMethod::kUprobeMulti) {
    // The way the tool attaches.
    auto probes = load_and_attach(load_options(), sites_, plans_, pid);
    ASSERT_TRUE(probes) << probes.error().message();
    if (probes->method != AttachMethod::kUprobeMulti) {
      GTEST_SKIP() << "this kernel has no uprobe_multi links (load_and_attach fell back)";
    }
    check_teardown(*probes->object, probes->links);
    return;
  }
  // What load_and_attach falls back to on kernels without uprobe_multi.
  LoadOptions options = load_options();
  options.uprobe_multi = false;
  auto object = BpfObject::load(options);
  ASSERT_TRUE(object) << object.error().message();
  auto links = UprobeLinks::attach(**object, sites_, plans_, pid, AttachMethod::kPerfEvent);
  ASSERT_TRUE(links) << links.error().message();
  check_teardown(**object, *links);
}

INSTANTIATE_TEST_SUITE_P(
    MethodsAndExits, LinkTeardown,
    ::testing::Values(
        TeardownCase{AttachMethod::kUprobeMulti, ExitProbeChoice::kReturnProbe,
                     Teardown::kDetachAll},
        TeardownCase{AttachMethod::kUprobeMulti, ExitProbeChoice::kRetInstructions,
                     Teardown::kDetachAll},
        TeardownCase{AttachMethod::kPerfEvent, ExitProbeChoice::kReturnProbe, Teardown::kDetachAll},
        TeardownCase{AttachMethod::kPerfEvent, ExitProbeChoice::kRetInstructions,
                     Teardown::kDetachAll},
        TeardownCase{AttachMethod::kUprobeMulti, ExitProbeChoice::kRetInstructions,
                     Teardown::kDestroy},
        TeardownCase{AttachMethod::kPerfEvent, ExitProbeChoice::kReturnProbe, Teardown::kDestroy}),
    case_name);

}  // namespace
}  // namespace funclatency
