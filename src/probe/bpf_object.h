// The loaded BPF object: open -> set read-only config -> size maps -> load.
// Owns the skeleton; destroying it detaches nothing by itself (links do).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bpf/funclatency.h"
#include "common/error.h"
#include "common/non_copyable.h"

struct funclatency_bpf;
struct fl_fn_config;
struct bpf_program;
struct bpf_object;

namespace funclatency {

struct LoadOptions {
  uint64_t unit_ns = 1000;                     // display unit the kernel buckets in
  uint32_t filter_tgid = 0;                    // 0: every process
  uint32_t num_functions = 1;                  // sizes the per-function maps
  uint32_t ringbuf_bytes = 2u << 20;           // mapped twice: counts 4 MB of RSS once read
  uint32_t initial_mode = 0;                   // enum fl_mode for every function
  std::vector<uint32_t> function_flags;        // FL_FN_* by function id; missing = 0
  std::vector<uint64_t> function_subtract_ns;  // probe cost to take off; missing = 0
  std::vector<uint32_t> function_goid_offset;  // Go code: goid in runtime.g; missing = 0
  std::vector<uint32_t> function_slot;         // kernel slot or FL_NO_SLOT; set by load
  bool uprobe_multi = false;                   // load the programs for uprobe_multi links
  // Which exit programs to load: the verifier costs milliseconds per program
  // at every start, and most runs use only one kind of exit.
  bool return_program = true;  // uretprobes
  bool exit_program = true;    // probes on ret instructions
  bool go_programs = false;    // goroutine-keyed entry and ret probes (sizes their map too)
  // With go_programs: goroutines inside traced calls at once (--go-goroutines);
  // the map is allocated as they enter, the bound costs its hash buckets.
  uint32_t go_goroutines = FL_GO_MAX_GOROUTINES;
  // raw_tp/sched_process_exit: a thread that ends with calls in flight has
  // them counted lost.
  bool thread_exit_program = true;
  // --cpu-split: the sched_switch program, and FL_CALL_PARTS fn_stats entries
  // per function (enum fl_call_part).
  bool cpu_split = false;
  // --self: each call's exclusive time too, one more fn_stats entry per
  // slot (FL_PART_SELF, after the split's parts).
  bool self_time = false;
  // --by: FL_BY_* bits, and the series the kernel keeps apart at most.
  uint32_t series_by = 0;
  uint32_t max_series = 1000;
  // --by retval/argN (FL_BY_VALUE): enum fl_value_source, the argument or
  // Go result word, enum fl_value_rule.
  uint32_t value_source = FL_VALUE_NONE;
  uint32_t value_index = 0;
  uint32_t value_rule = FL_RULE_ZERO;
  // Kernel-mode totals slots (per-CPU fn_stats entries); 0: one per function.
  // With initial_mode kernel, the first kernel_slots functions get one.
  uint32_t kernel_slots = 0;
  // -c/--cgroup: open directory fds of the cgroups to trace (borrowed).
  std::vector<int> cgroup_fds;
  // --slowest/--slower-than: calls at least a function's threshold long go
  // out with their stacks on the slow_calls ring; every function starts at
  // initial_slow_ns (FL_NO_THRESHOLD: none until set).
  bool slow_calls = false;
  uint64_t initial_slow_ns = UINT64_MAX;
  // --slowest K: the probes also keep a floor of their own per function
  // (fl_slow_floor); 0 with --slower-than, whose every call is sent. Every
  // function starts at it; set_slow_calls gives one its own (--config).
  uint32_t slowest_floor_k = 0;
  // Size the floors even when slowest_floor_k is 0 (a function may get a K).
  bool slow_floors = false;
  std::vector<uint64_t> function_slow_ns;    // set by load
  std::vector<uint32_t> function_slowest_k;  // set by load
  std::vector<uint32_t> function_mode;       // enum fl_mode by function; set by load
  // Spans (probe/span_links.h): their settings, span i has function id
  // span_first_fn + i (num_functions counts them); the open-span map holds
  // span_capacity entries.
  std::vector<fl_span_config> spans;
  uint32_t span_first_fn = 0;
  uint32_t span_capacity = 16384;
};

// Whether the run uses none of the options that add code to the call path
// (--cpu-split, --self, --by, slow calls): then the entry and exit programs
// are the plain builds (funclatency.bpf.c, FL_OPTION), which the verifier
// goes over in a fraction of the time. entry_program() and the others give
// whichever loaded.
bool uses_plain_programs(const LoadOptions& options);

// --slowest/--slower-than of one function: the threshold its calls are sent
// over (FL_NO_THRESHOLD: none) and the K slowest its floor keeps (0: none).
struct FunctionSlowCalls {
  uint64_t slow_ns = UINT64_MAX;  // FL_NO_THRESHOLD
  uint32_t slowest_k = 0;
};

// fn_stats entries per kernel slot: the wall time, the split's parts with
// --cpu-split, then the self time with --self. Entry k of a slot is at key
// slot + k * (number of slots).
uint32_t stats_parts(bool cpu_split, bool self_time);
// Which part (enum fl_call_part) entry k of a slot holds.
uint32_t part_at_entry(uint32_t entry, bool cpu_split, bool self_time);

class BpfObject : NonCopyable {
 public:
  static Result<std::unique_ptr<BpfObject>> load(const LoadOptions& options);
  ~BpfObject();

  bpf_program* entry_program() const;
  bpf_program* return_program() const;
  bpf_program* exit_program() const;
  bpf_program* go_entry_program() const;
  bpf_program* go_exit_program() const;
  bpf_program* sched_switch_program() const;
  bpf_program* thread_exit_program() const;
  bpf_program* span_start_program() const;
  bpf_program* span_end_program() const;
  // Spans: the open spans (fl_span_key -> fl_span_open).
  int open_spans_fd() const;
  // Spans: per-CPU fl_span_lost by span index.
  int span_lost_fd() const;
  // Spans: span `index`'s settings (within the room load gave spans), for a
  // span the agent follows from a reload on.
  Result<void> set_span(uint32_t index, const fl_span_config& settings);
  int fn_stats_fd() const;
  int fn_lost_fd() const;
  int fn_config_fd() const;
  int events_fd() const;
  int slow_calls_fd() const;
  int series_stats_fd() const;
  // Go code: the goroutines' shadow stacks (fl_go_key -> fl_go_stack).
  int go_stacks_fd() const;
  // --by in kernel mode: series folded into `other` so far (bounded count).
  uint64_t series_folded() const;
  uint32_t num_functions() const { return options_.num_functions; }
  // Where the functions' ids end (the spans' follow).
  uint32_t function_ids_end() const {
    return options_.spans.empty() ? options_.num_functions : options_.span_first_fn;
  }
  uint32_t kernel_slots() const { return options_.kernel_slots; }
  // The function's kernel slot, or FL_NO_SLOT.
  uint32_t slot_of(uint32_t fn_id) const { return options_.function_slot[fn_id]; }
  // Kernel memory the maps lock, as the kernel accounts it (fdinfo memlock).
  uint64_t locked_memory() const;
  const LoadOptions& options() const { return options_; }

  // Switches how a function's completed calls are aggregated from its next
  // return on; a single array write, so no call is lost or counted twice.
  Result<void> set_mode(uint32_t fn_id, uint32_t mode);
  // The same, giving the function kernel slot `slot` (FL_NO_SLOT: none).
  Result<void> set_mode(uint32_t fn_id, uint32_t mode, uint32_t slot);
  // A function's own slow-call settings (a --config target's), in force from
  // its next configure_function (before its probes are attached).
  Result<void> set_slow_calls(uint32_t fn_id, FunctionSlowCalls slow);
  FunctionSlowCalls slow_calls_of(uint32_t fn_id) const;
  // Whether the probes send slow calls at all (LoadOptions::slow_calls).
  bool slow_calls() const { return options_.slow_calls; }
  // --slowest/--slower-than: a new interval (returns its number); the
  // probes' floors start over and tag what they send with it.
  uint64_t start_slow_interval();
  // Sets up a function id the maps were sized for but no probe used yet (a
  // library the process loads later): its flags, probe cost, mode and, for Go
  // code, where runtime.g holds the goroutine id. Call it before the
  // function's probes attach.
  Result<void> configure_function(uint32_t fn_id, uint32_t mode, uint32_t flags,
                                  uint64_t subtract_ns, uint32_t goid_offset = 0);

 private:
  fl_fn_config config_of(uint32_t fn_id, uint32_t mode) const;
  Result<void> configure_all();
  BpfObject(funclatency_bpf* skeleton, LoadOptions options)
      : skeleton_(skeleton), options_(options) {}
  funclatency_bpf* skeleton_;
  LoadOptions options_;
};

// The kernel memory `object`'s maps lock (fdinfo memlock), in bytes: the
// tracing object's and the exec watch's.
uint64_t locked_memory_of(bpf_object* object);

}  // namespace funclatency
