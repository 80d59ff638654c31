#include "collect/calibration.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <map>

#include "collect/map_reader.h"
#include "histogram/latency_histogram.h"
#include "probe/own_code.h"
#include "probe/uprobe_links.h"

// Empty functions with known first instructions: `push` is emulated by the
// kernel's uprobes, `mov` is single-stepped. Written in assembly so no
// compiler flag (CET, frame pointers) changes them; one copy per exit kind
// so each case is traced alone. Each ends with a label, `NAME_end`: the
// package strips the binary, so the probes are placed from the functions'
// addresses and these sizes, never from the symbol table.
asm(R"(
  .text
  .macro funclatency_calibration name, first
  .globl \name
  .type \name, @function
\name:
  \first
  pop %rbp
  ret
  .globl \name\()_end
  .hidden \name\()_end
\name\()_end:
  .size \name, .-\name
  .endm
  funclatency_calibration fl_calibration_emulated_uretprobe, "push %rbp"
  funclatency_calibration fl_calibration_emulated_ret, "push %rbp"
  funclatency_calibration fl_calibration_stepped_uretprobe, "mov %rsp, %rax; push %rbp"
  funclatency_calibration fl_calibration_stepped_ret, "mov %rsp, %rax; push %rbp"
)");

extern "C" {
void fl_calibration_emulated_uretprobe();
void fl_calibration_emulated_ret();
void fl_calibration_stepped_uretprobe();
void fl_calibration_stepped_ret();
extern const char fl_calibration_emulated_uretprobe_end[];
extern const char fl_calibration_emulated_ret_end[];
extern const char fl_calibration_stepped_uretprobe_end[];
extern const char fl_calibration_stepped_ret_end[];
}

namespace funclatency {

namespace {

struct Case {
  const char* symbol;
  void (*function)();
  const char* end;  // the first byte after the function
  bool emulated;
  bool ret_instructions;
};

constexpr std::array<Case, 4> kCases = {{
    {"fl_calibration_emulated_uretprobe", fl_calibration_emulated_uretprobe,
     fl_calibration_emulated_uretprobe_end, true, false},
    {"fl_calibration_emulated_ret", fl_calibration_emulated_ret, fl_calibration_emulated_ret_end,
     true, true},
    {"fl_calibration_stepped_uretprobe", fl_calibration_stepped_uretprobe,
     fl_calibration_stepped_uretprobe_end, false, false},
    {"fl_calibration_stepped_ret", fl_calibration_stepped_ret, fl_calibration_stepped_ret_end,
     false, true},
}};

}  // namespace

Result<Calibration> calibrate(uint64_t calls_per_case) {
  std::vector<ProbeSite> sites;
  std::vector<ProbePlan> plans;
  ProbePlanner planner;
  for (const Case& c : kCases) {
    const auto start = reinterpret_cast<uintptr_t>(c.function);
    const auto end = reinterpret_cast<uintptr_t>(c.end);
    auto site = own_probe_site(reinterpret_cast<const void*>(start), end - start, c.symbol);
    if (!site) return std::unexpected(site.error());
    auto plan = planner.plan(*site, c.ret_instructions ? ExitProbeChoice::kRetInstructions
                                                       : ExitProbeChoice::kReturnProbe);
    if (!plan) return std::unexpected(plan.error());
    if (plan->entry_emulated != c.emulated || plan->use_ret_instructions != c.ret_instructions) {
      return runtime_error(fmt::format("place calibration probes on {}", c.symbol));
    }
    sites.push_back(std::move(*site));
    plans.push_back(std::move(*plan));
  }

  LoadOptions load;
  load.unit_ns = 1;
  load.filter_tgid = static_cast<uint32_t>(getpid());
  load.num_functions = static_cast<uint32_t>(sites.size());
  load.initial_mode = FL_MODE_KERNEL;
  load.ringbuf_bytes = 4096;
  auto probes = load_and_attach(load, sites, plans, getpid());
  if (!probes) return std::unexpected(probes.error());

  for (const Case& c : kCases) {
    for (uint64_t i = 0; i < calls_per_case; i++) c.function();
  }
  probes->detach();

  Calibration calibration;
  calibration.calls_per_case = calls_per_case;
  MapReader reader(probes->object->fn_stats_fd(), probes->object->fn_lost_fd(),
                   probes->object->num_functions());
  for (uint32_t fn = 0; fn < kCases.size(); fn++) {
    auto totals = reader.read_totals(fn);
    if (!totals) return std::unexpected(totals.error());
    LatencyHistogram histogram(1);
    histogram.add_counts(totals->buckets, totals->count, totals->sum_ns, totals->min_ns,
                         totals->max_ns);
    calibration.median_ns[kCases[fn].emulated ? 1 : 0][kCases[fn].ret_instructions ? 1 : 0] =
        histogram.percentile_ns(0.5);
  }
  return calibration;
}

std::string format_calibration(const Calibration& c) {
  return fmt::format(
      "Probe overhead inside a measured duration (median of {} calls of an empty function):\n"
      "  entry instruction   exit by return probe   exit by ret-instruction probe\n"
      "  emulated (push/nop) {:>17} ns {:>28} ns\n"
      "  single-stepped      {:>17} ns {:>28} ns\n",
      c.calls_per_case, c.median_ns[1][0], c.median_ns[1][1], c.median_ns[0][0], c.median_ns[0][1]);
}

}  // namespace funclatency
