#include "probe/bpf_object.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include "probe/tracing_capabilities.h"

extern "C" {
#include "bpf/funclatency.h"
}
#include "funclatency_bpf.skel.h"
#include "probe/uprobe_multi.h"

namespace funclatency {

// The ABI shared with the BPF side: fixed layouts with no implicit padding,
// so clang's BPF target and g++ agree on every offset.
static_assert(sizeof(fl_event) == 16);
static_assert(sizeof(fl_fn_stats) == 4 * 8 + FL_NUM_BUCKETS * 8);
static_assert(sizeof(fl_fn_lost) == 5 * 8);
static_assert(sizeof(fl_span_lost) == 3 * 8);
static_assert(sizeof(fl_span_config) == 24);
static_assert(sizeof(fl_span_key) == 16);
static_assert(sizeof(fl_span_open) == 8);
static_assert(sizeof(fl_fn_config) == 40);
static_assert(sizeof(fl_user_regs) == 8 * 8);
static_assert(sizeof(fl_slow_floor) == 3 * 8 + FL_MAX_SLOWEST * 8);
static_assert(sizeof(fl_slow_call) ==
              5 * 8 + 4 * 4 + 16 + sizeof(fl_user_regs) + 8 + FL_STACK_BYTES + 8);
static_assert(sizeof(fl_frame) == 40);
static_assert(sizeof(fl_event_ext) == 80);
static_assert(sizeof(fl_series_key) == 48);
static_assert(sizeof(fl_switch_marks) == 32);
static_assert(sizeof(fl_shadow_stack) ==
              8 + FL_MAX_DEPTH * sizeof(fl_frame) + FL_MAX_DEPTH * sizeof(fl_switch_marks));
static_assert(sizeof(fl_thread_switches) == 64);

static_assert(sizeof(fl_go_key) == 16);
static_assert(sizeof(fl_go_stack) == 16 + FL_GO_MAX_DEPTH * sizeof(fl_frame));

uint32_t stats_parts(bool cpu_split, bool self_time) {
  return (cpu_split ? uint32_t{FL_CALL_PARTS} : 1u) + (self_time ? 1u : 0u);
}

uint32_t part_at_entry(uint32_t entry, bool cpu_split, bool self_time) {
  const uint32_t parts = cpu_split ? uint32_t{FL_CALL_PARTS} : 1u;
  return self_time && entry == parts ? uint32_t{FL_PART_SELF} : entry;
}

namespace {

// --slowest/--slower-than: room for ~120 slow calls with their 16 KB stacks
// between two reads (a slow call wakes the reader at once).
constexpr uint32_t kSlowCallsRingBytes = 2u << 20;

// Kernel slots: at least one, at most one per function; 0 asks one per function.
uint32_t slots_for(const LoadOptions& options) {
  const uint32_t entries = options.num_functions ? options.num_functions : 1;
  return std::clamp<uint32_t>(options.kernel_slots ? options.kernel_slots : entries, 1, entries);
}

// --by in kernel mode: the series folded into `other` are counted once each
// while the LRU holds them: as many as the series kept apart, at least
// enough that the LRU's per-CPU free lists never evict early (its refill
// takes up to 128 free entries a CPU), at most 16,384 (2 MB preallocated).
uint32_t folded_series_entries(uint32_t max_series) {
  return std::clamp<uint32_t>(max_series, 1024, 16384);
}

// Read-only settings and map sizes, before load. A map a run does not use
// keeps one entry (the LRU and per-CPU ones are allocated whole). Returns a
// negative errno and the map it failed on.
std::pair<int, const char*> size_maps(funclatency_bpf* skeleton, const LoadOptions& options) {
  const uint32_t entries = options.num_functions ? options.num_functions : 1;
  const uint32_t slots = slots_for(options);
  const uint32_t parts = stats_parts(options.cpu_split, options.self_time);
  skeleton->rodata->unit_ns = options.unit_ns;
  skeleton->rodata->filter_tgid = options.filter_tgid;
  skeleton->rodata->split_stride = options.cpu_split ? slots : 0;
  skeleton->rodata->self_key_offset =
      options.self_time ? stats_parts(options.cpu_split, false) * slots : 0;
  skeleton->rodata->series_by = options.series_by;
  skeleton->rodata->value_source = options.value_source;
  skeleton->rodata->value_index = options.value_index;
  skeleton->rodata->value_rule = options.value_rule;
  skeleton->rodata->cgroup_filters = static_cast<uint32_t>(options.cgroup_fds.size());
  skeleton->rodata->slow_calls_on = options.slow_calls ? 1 : 0;
  const std::pair<bpf_map*, uint32_t> sizes[] = {
      {skeleton->maps.fn_lost, entries},
      {skeleton->maps.fn_config, entries},
      {skeleton->maps.fn_stats, slots * parts},
      {skeleton->maps.thread_switches, options.cpu_split ? FL_MAX_SPLIT_THREADS : 1},
      {skeleton->maps.events, options.ringbuf_bytes},
      {skeleton->maps.slow_calls, options.slow_calls ? kSlowCallsRingBytes : 4096u},
      {skeleton->maps.slow_floors,
       options.slow_calls && (options.slowest_floor_k || options.slow_floors) ? entries : 1},
      {skeleton->maps.series_stats, options.series_by ? options.max_series * parts : 1},
      {skeleton->maps.folded_series,
       options.series_by ? folded_series_entries(options.max_series) : 1},
      {skeleton->maps.go_stacks, options.go_programs ? options.go_goroutines : 1},
      {skeleton->maps.span_config, static_cast<uint32_t>(options.spans.size())},
      {skeleton->maps.span_lost, static_cast<uint32_t>(options.spans.size())},
      {skeleton->maps.open_spans, options.spans.empty() ? 1 : options.span_capacity},
  };
  skeleton->rodata->span_first_fn = options.span_first_fn;
  for (const auto& [map, size] : sizes) {
    if (int rc = bpf_map__set_max_entries(map, std::max(size, 1u)); rc < 0) {
      return {rc, bpf_map__name(map)};
    }
  }
  return {0, nullptr};
}

// Which programs load (the verifier costs milliseconds each), and how they attach.
void choose_programs(funclatency_bpf* skeleton, const LoadOptions& options) {
  if (options.uprobe_multi) {
    for (bpf_program* program :
         {skeleton->progs.fl_entry, skeleton->progs.fl_return, skeleton->progs.fl_exit,
          skeleton->progs.fl_entry_plain, skeleton->progs.fl_return_plain,
          skeleton->progs.fl_exit_plain, skeleton->progs.fl_go_entry, skeleton->progs.fl_go_exit}) {
      bpf_program__set_expected_attach_type(program,
                                            static_cast<bpf_attach_type>(kAttachTypeUprobeMulti));
    }
  }
  const bool plain = uses_plain_programs(options);
  bpf_program__set_autoload(skeleton->progs.fl_entry, !plain);
  bpf_program__set_autoload(skeleton->progs.fl_entry_plain, plain);
  bpf_program__set_autoload(skeleton->progs.fl_return, options.return_program && !plain);
  bpf_program__set_autoload(skeleton->progs.fl_return_plain, options.return_program && plain);
  bpf_program__set_autoload(skeleton->progs.fl_exit, options.exit_program && !plain);
  bpf_program__set_autoload(skeleton->progs.fl_exit_plain, options.exit_program && plain);
  bpf_program__set_autoload(skeleton->progs.fl_go_entry, options.go_programs);
  bpf_program__set_autoload(skeleton->progs.fl_go_exit, options.go_programs);
  bpf_program__set_autoload(skeleton->progs.fl_sched_switch, options.cpu_split);
  bpf_program__set_autoload(skeleton->progs.fl_thread_exit, options.thread_exit_program);
  bpf_program__set_autoload(skeleton->progs.fl_span_start, !options.spans.empty());
  bpf_program__set_autoload(skeleton->progs.fl_span_end, !options.spans.empty());
}

}  // namespace

bool uses_plain_programs(const LoadOptions& options) {
  return !options.cpu_split && !options.self_time && options.series_by == 0 &&
         options.value_source == FL_VALUE_NONE && !options.slow_calls;
}

Result<std::unique_ptr<BpfObject>> BpfObject::load(const LoadOptions& options) {
  if (options.cgroup_fds.size() > FL_MAX_CGROUP_FILTERS) {
    return bad_input(fmt::format("{} cgroups given, at most {}", options.cgroup_fds.size(),
                                 FL_MAX_CGROUP_FILTERS));
  }
  funclatency_bpf* skeleton = funclatency_bpf::open();
  if (!skeleton) return runtime_error("open BPF object", errno);
  auto fail = [&](std::string what, long code) -> std::unexpected<Error> {
    int err = errno_from(code);
    funclatency_bpf::destroy(skeleton);
    if (err == EPERM || err == EACCES) {
      return bad_input(std::move(what), privilege_hint(), err);
    }
    return runtime_error(std::move(what), err);
  };
  if (auto [rc, map] = size_maps(skeleton, options); rc < 0) {
    return fail(fmt::format("size BPF map {}", map), rc);
  }
  choose_programs(skeleton, options);
  if (int rc = funclatency_bpf::load(skeleton); rc < 0) return fail("load BPF programs", rc);

  auto object = std::unique_ptr<BpfObject>(new BpfObject(skeleton, options));
  if (auto configured = object->configure_all(); !configured) {
    return std::unexpected(configured.error());
  }
  return object;
}

// After load: the cgroup filter, and every function's settings in one batch
// (a write per function costs milliseconds with a thousand functions).
// Started in kernel mode, the first functions get the slots.
Result<void> BpfObject::configure_all() {
  const uint32_t entries = options_.num_functions ? options_.num_functions : 1;
  options_.kernel_slots = slots_for(options_);
  options_.function_slot.assign(entries, FL_NO_SLOT);
  if (options_.initial_mode == FL_MODE_KERNEL) {
    for (uint32_t id = 0; id < options_.kernel_slots; id++) options_.function_slot[id] = id;
  }
  for (uint32_t index = 0; index < options_.cgroup_fds.size(); index++) {
    int fd = options_.cgroup_fds[index];
    if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.cgroup_filter), &index, &fd, BPF_ANY) < 0) {
      return runtime_error("set the -c cgroup filter", errno);
    }
  }
  options_.function_flags.resize(entries, 0);
  options_.function_subtract_ns.resize(entries, 0);
  options_.function_goid_offset.resize(entries, 0);
  options_.function_slow_ns.resize(entries, options_.initial_slow_ns);
  options_.function_slowest_k.resize(entries, options_.slowest_floor_k);
  options_.function_mode.assign(entries, options_.initial_mode);
  std::vector<uint32_t> ids;
  std::vector<fl_fn_config> configs;
  for (uint32_t id = 0; id < entries; id++) {
    ids.push_back(id);
    configs.push_back(config_of(id, options_.initial_mode));
  }
  uint32_t count = static_cast<uint32_t>(ids.size());
  if (bpf_map_update_batch(fn_config_fd(), ids.data(), configs.data(), &count, nullptr) < 0) {
    return runtime_error("configure the traced functions", errno);
  }
  for (uint32_t index = 0; index < options_.spans.size(); index++) {
    if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.span_config), &index,
                            &options_.spans[index], BPF_ANY) < 0) {
      return runtime_error(fmt::format("configure span {}", index), errno);
    }
  }
  return {};
}

Result<void> BpfObject::set_span(uint32_t index, const fl_span_config& settings) {
  if (index >= options_.spans.size()) {
    return runtime_error(
        fmt::format("configure span {}: the run has room for {}", index, options_.spans.size()));
  }
  if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.span_config), &index, &settings, BPF_ANY) <
      0) {
    return runtime_error(fmt::format("configure span {}", index), errno);
  }
  options_.spans[index] = settings;
  return {};
}

BpfObject::~BpfObject() {
  funclatency_bpf::destroy(skeleton_);
}

// The call probes: whichever build loaded (choose_programs).
bpf_program* BpfObject::entry_program() const {
  return uses_plain_programs(options_) ? skeleton_->progs.fl_entry_plain
                                       : skeleton_->progs.fl_entry;
}
bpf_program* BpfObject::return_program() const {
  return uses_plain_programs(options_) ? skeleton_->progs.fl_return_plain
                                       : skeleton_->progs.fl_return;
}
bpf_program* BpfObject::exit_program() const {
  return uses_plain_programs(options_) ? skeleton_->progs.fl_exit_plain : skeleton_->progs.fl_exit;
}

// The skeleton's programs and maps the rest of the code reaches, as lists of
// (accessor, name in the skeleton): one more is a line here and its
// declaration in bpf_object.h.
#define FL_PROGRAM_ACCESSORS(X)            \
  X(go_entry_program, fl_go_entry)         \
  X(go_exit_program, fl_go_exit)           \
  X(sched_switch_program, fl_sched_switch) \
  X(thread_exit_program, fl_thread_exit)   \
  X(span_start_program, fl_span_start)     \
  X(span_end_program, fl_span_end)
#define FL_MAP_FD_ACCESSORS(X)     \
  X(open_spans_fd, open_spans)     \
  X(span_lost_fd, span_lost)       \
  X(fn_stats_fd, fn_stats)         \
  X(fn_lost_fd, fn_lost)           \
  X(fn_config_fd, fn_config)       \
  X(events_fd, events)             \
  X(slow_calls_fd, slow_calls)     \
  X(series_stats_fd, series_stats) \
  X(go_stacks_fd, go_stacks)
#define FL_DEFINE_PROGRAM_ACCESSOR(accessor, program) \
  bpf_program* BpfObject::accessor() const {          \
    return skeleton_->progs.program;                  \
  }
#define FL_DEFINE_MAP_FD_ACCESSOR(accessor, map) \
  int BpfObject::accessor() const {              \
    return bpf_map__fd(skeleton_->maps.map);     \
  }
FL_PROGRAM_ACCESSORS(FL_DEFINE_PROGRAM_ACCESSOR)
FL_MAP_FD_ACCESSORS(FL_DEFINE_MAP_FD_ACCESSOR)
#undef FL_DEFINE_MAP_FD_ACCESSOR
#undef FL_DEFINE_PROGRAM_ACCESSOR
#undef FL_MAP_FD_ACCESSORS
#undef FL_PROGRAM_ACCESSORS

uint64_t BpfObject::start_slow_interval() {
  return __atomic_add_fetch(&skeleton_->bss->slow_gen, 1, __ATOMIC_SEQ_CST);
}

uint64_t BpfObject::series_folded() const {
  return __atomic_load_n(&skeleton_->bss->series_folded, __ATOMIC_RELAXED);
}

fl_fn_config BpfObject::config_of(uint32_t fn_id, uint32_t mode) const {
  fl_fn_config config{};
  config.mode = mode;
  config.flags = options_.function_flags[fn_id];
  config.subtract_ns = options_.function_subtract_ns[fn_id];
  config.goid_offset = options_.function_goid_offset[fn_id];
  config.slot = options_.function_slot[fn_id];
  config.slow_ns = options_.slow_calls ? options_.function_slow_ns[fn_id] : FL_NO_THRESHOLD;
  config.slowest_k = options_.slow_calls ? options_.function_slowest_k[fn_id] : 0;
  return config;
}

Result<void> BpfObject::set_mode(uint32_t fn_id, uint32_t mode, uint32_t slot) {
  if (fn_id >= options_.num_functions || (slot != FL_NO_SLOT && slot >= options_.kernel_slots)) {
    return runtime_error(fmt::format("set function {} to slot {}: out of range", fn_id, slot));
  }
  options_.function_slot[fn_id] = slot;
  return set_mode(fn_id, mode);
}

uint64_t BpfObject::locked_memory() const {
  return locked_memory_of(skeleton_->obj);
}

uint64_t locked_memory_of(bpf_object* object) {
  uint64_t total = 0;
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, object) {
    const int fd = bpf_map__fd(map);
    if (fd < 0) continue;
    std::ifstream fdinfo(fmt::format("/proc/self/fdinfo/{}", fd));
    for (std::string line; std::getline(fdinfo, line);) {
      if (line.starts_with("memlock:")) total += std::stoull(line.substr(8));
    }
  }
  return total;
}

Result<void> BpfObject::set_mode(uint32_t fn_id, uint32_t mode) {
  if (fn_id >= options_.num_functions) {
    return runtime_error(fmt::format("set the mode of function {}: out of range", fn_id));
  }
  options_.function_mode[fn_id] = mode;
  fl_fn_config config = config_of(fn_id, mode);
  if (bpf_map_update_elem(fn_config_fd(), &fn_id, &config, BPF_ANY) < 0) {
    return runtime_error(fmt::format("set aggregation mode of function {}", fn_id), errno);
  }
  return {};
}

Result<void> BpfObject::set_slow_calls(uint32_t fn_id, FunctionSlowCalls slow) {
  if (fn_id >= options_.num_functions) {
    return runtime_error(fmt::format("set slow calls of function {}: the maps hold {}", fn_id,
                                     options_.num_functions));
  }
  options_.function_slow_ns[fn_id] = slow.slow_ns;
  options_.function_slowest_k[fn_id] = slow.slowest_k;
  return {};
}

FunctionSlowCalls BpfObject::slow_calls_of(uint32_t fn_id) const {
  if (!options_.slow_calls || fn_id >= options_.num_functions) return {};
  return {options_.function_slow_ns[fn_id], options_.function_slowest_k[fn_id]};
}

Result<void> BpfObject::configure_function(uint32_t fn_id, uint32_t mode, uint32_t flags,
                                           uint64_t subtract_ns, uint32_t goid_offset) {
  if (fn_id >= options_.num_functions) {
    return runtime_error(
        fmt::format("configure function {}: the maps hold {}", fn_id, options_.num_functions));
  }
  options_.function_flags[fn_id] = flags;
  options_.function_subtract_ns[fn_id] = subtract_ns;
  options_.function_goid_offset[fn_id] = goid_offset;
  return set_mode(fn_id, mode);
}

}  // namespace funclatency
