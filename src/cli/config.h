// The command line, parsed into one immutable Config.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "collect/trace_session.h"
#include "collect/tracing_choices.h"
#include "collect/value_series.h"
#include "model/span.h"
#include "probe/probe_plan.h"

namespace CLI {
class App;
}

namespace funclatency {

struct Config {
  std::vector<std::string> targets;
  std::optional<int> pid;
  std::chrono::milliseconds interval{0};
  std::optional<std::chrono::milliseconds> duration;
  uint64_t unit_ns = 1000;
  std::string unit_name = "usec";
  bool timestamp = false;
  bool json = false;
  bool verbose = false;
  bool list = false;
  bool regex = false;
  bool merge = false;
  size_t max_functions = 5000;
  bool wait_for_library = false;  // with -p: a library nobody can find yet is awaited
  uint32_t late_functions = 256;  // with -p: room for libraries loaded later
  ModeChoice mode = ModeChoice::kAuto;
  double auto_threshold = 10000;
  ExitProbeChoice exit_probes = ExitProbeChoice::kAuto;
  bool calibrate = false;          // measure the probes' own cost, print it, exit
  bool subtract_overhead = false;  // take that cost off every duration
  bool cpu_split = false;          // each call's on-CPU, runnable and blocked time
  bool self_time = false;          // --self: each call's exclusive time too
  uint32_t series_by = 0;          // --by: FL_BY_* bits
  uint32_t max_series = 1000;      // --max-series
  // --series-expiry: how long an ended series (processes gone) waits
  // without calls before it is dropped; unset: series_expiry()'s default.
  std::optional<std::chrono::milliseconds> series_expiry;
  ValueSeries value_series;              // --by retval[:RULE] / argN[:BUCKETS]
  std::optional<uint32_t> kernel_slots;  // --kernel-slots; unset: kernel_slots_for()
  std::vector<std::string> cgroups;      // -c/--cgroup: cgroup v2 directories to trace
  // --go-goroutines: Go code's goroutines inside traced calls at once.
  uint32_t go_goroutines = kDefaultGoGoroutines;
  size_t slowest = 0;                      // --slowest K: the K slowest calls with their stacks
  std::optional<uint64_t> slower_than_ns;  // --slower-than: show each slower call as it ends
  // --follow or --config: programs followed into every container (each
  // process that runs them, now or later); `targets` is then empty.
  std::vector<FollowTarget> follow_targets;
  std::string config_file;  // --config: re-read on SIGHUP
  bool check_config = false;
  std::vector<SpanSpec> spans;  // --span, or the --config file's `spans`
  // With --follow or --config the spans are followed: their points are the
  // followed program's (the start's BINARY), attached in each file of it
  // as it runs; span_room indexes are set aside at load (with --config
  // more than the file's spans, for the ones a reload adds).
  bool spans_followed = false;
  uint32_t span_room = 0;
  uint32_t span_capacity = 16384;  // --span-capacity: open spans the kernel holds at once
  // --follow-hold: a process that starts a followed program not attached yet
  // is stopped at its exec until its probes are in, this long at most.
  std::chrono::milliseconds follow_hold{0};
  // --test-follow-delay MS[:INODE] (hidden, the tests' only): each exec record
  // of a file not judged yet (with INODE, that file's only) is judged MS late.
  std::chrono::milliseconds test_follow_delay{0};
  std::optional<uint64_t> test_follow_delay_inode;

  bool following() const { return !follow_targets.empty() || spans_followed; }
};

// Raw values CLI11 fills; turned into a Config by finish_config.
struct CommandLine {
  std::vector<std::string> targets;
  int pid = 0;
  double interval_s = 0;
  double duration_s = 0;
  bool usec = false, msec = false, nsec = false;
  bool timestamp = false, json = false, verbose = false, list = false, regex = false, merge = false;
  size_t max_functions = 5000;
  bool wait_for_library = false;
  uint32_t late_functions = 256;
  std::string mode = "auto";
  double auto_threshold = 10000;
  std::string exit_probes = "auto";
  bool calibrate = false, subtract_overhead = false;
  bool cpu_split = false;
  bool self_time = false;
  std::vector<std::string> by;
  uint32_t max_series = 1000;
  std::string series_expiry;
  uint32_t kernel_slots = 0;   // 0: not given
  uint32_t go_goroutines = 0;  // 0: not given
  std::vector<std::string> cgroups;
  size_t slowest = 0;
  std::string slower_than;
  bool follow = false;
  std::string config_file;
  bool check_config = false;
  std::vector<std::string> spans;
  uint32_t span_capacity = 16384;
  uint32_t follow_hold_ms = 0;
  std::string test_follow_delay;
};

// `targets_required`: false when the command line names a --config file,
// whose targets take their place (CLI11 then lets no option take a TARGET
// as its value, as with --otlp URL).
void add_core_options(CLI::App& app, CommandLine& values, bool targets_required = true);
Result<Config> finish_config(const CommandLine& values);
// --follow: the TARGETs as programs to follow, one target per program.
// Spans from `texts` (--span's or the --config file's), names unique; with
// `followed`, each has both points in one program named as a followed
// program is (an absolute path inside the container, or a file name).
Result<std::vector<SpanSpec>> spans_of(const std::vector<std::string>& texts, bool followed);
// Span indexes a --config run that starts with spans sets aside, for the
// spans its reloads add.
constexpr uint32_t kAgentSpanRoom = 16;

Result<std::vector<FollowTarget>> follow_targets_of(const std::vector<std::string>& targets,
                                                    bool regex);
// --config: the file's settings where the command line left them unset, and
// its targets to follow.
void apply_agent_settings(const AgentConfig& agent, CommandLine& values);
// The --by key that names a value of the call (none when no key does); two
// are refused.
Result<ValueSeries> value_series_of(const std::vector<std::string>& by);

}  // namespace funclatency
