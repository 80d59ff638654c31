#include "cli/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/span_option.h"
#include "collect/tracing_choices.h"
#include "common/duration.h"
#include "symbols/target_spec.h"

namespace funclatency {

Result<ValueSeries> value_series_of(const std::vector<std::string>& by) {
  ValueSeries found;
  std::string first;
  for (const auto& key : by) {
    if (!is_value_key(key)) continue;
    if (found.any()) {
      return bad_input(fmt::format("--by {} and {}: one value per run", first, key),
                       "split by the return value or by one argument");
    }
    auto spec = parse_value_key(key);
    if (!spec) return std::unexpected(spec.error());
    found = *spec;
    first = key;
  }
  return found;
}

namespace {

// --by, --max-series, --kernel-slots, -c, --slowest, --slower-than.
Result<void> take_series_and_slow_calls(const CommandLine& v, Config& config) {
  config.calibrate = v.calibrate;
  config.subtract_overhead = v.subtract_overhead;
  config.cpu_split = v.cpu_split;
  config.self_time = v.self_time;
  config.series_by = series_by_bits(v.by);
  auto value_series = value_series_of(v.by);
  if (!value_series) return std::unexpected(value_series.error());
  config.value_series = *value_series;
  if (config.value_series.any() && !v.config_file.empty()) {
    return bad_input(
        "--by retval/argN with --config: a target's series are set in the file, "
        "which knows pid, comm and cgroup only",
        "trace the function with TARGET or --follow to split it by value");
  }
  config.max_series = v.max_series;
  if (!v.series_expiry.empty()) {
    auto expiry = parse_duration_ns(v.series_expiry);
    if (!expiry) {
      return bad_input(fmt::format("--series-expiry {}: not a duration", v.series_expiry),
                       "write a number and a unit: 30s, 500ms; 0s ends a series at the first "
                       "report after its processes are gone");
    }
    config.series_expiry = std::chrono::milliseconds(*expiry / 1'000'000);
  }
  if (v.kernel_slots) config.kernel_slots = v.kernel_slots;
  if (v.go_goroutines) config.go_goroutines = v.go_goroutines;
  config.cgroups = v.cgroups;
  config.slowest = v.slowest;
  if (!v.slower_than.empty()) {
    auto slower_than = parse_duration_ns(v.slower_than);
    if (!slower_than) return std::unexpected(slower_than.error());
    config.slower_than_ns = *slower_than;
  }
  if (config.cgroups.size() > kMaxCgroupFilters) {
    return bad_input(fmt::format("{} cgroups given with -c, at most {}", config.cgroups.size(),
                                 kMaxCgroupFilters));
  }
  return {};
}

// Where the targets come from (TARGETs, --follow, --config) and what goes
// with each: one source, and no -p or -l with programs followed.
Result<void> check_target_sources(const CommandLine& v) {
  if (v.follow && !v.config_file.empty()) {
    return bad_input("--follow and --config both name programs to follow",
                     "put the targets in the --config file");
  }
  if (v.check_config && v.config_file.empty()) {
    return bad_input("--check-config needs --config FILE");
  }
  if ((v.follow || !v.config_file.empty()) && v.pid > 0) {
    return bad_input(v.follow ? "--follow follows programs into every process; -p names one"
                              : "--config follows programs into every process; -p names one",
                     "leave -p out, or trace the process without --follow");
  }
  if ((v.follow || !v.config_file.empty()) && v.list) {
    return bad_input("-l lists a file's functions; a followed program is found as it runs",
                     "list one container's copy: funclatency -l /proc/PID/root/PROGRAM:FUNCTION");
  }
  if (!v.config_file.empty() && !v.targets.empty()) {
    return bad_input("TARGETs and --config both given", "put the targets in the --config file");
  }
  if (v.targets.empty() && v.config_file.empty() && !v.calibrate && v.spans.empty()) {
    return bad_input("no TARGET given", "write BINARY:FUNCTION (see --help), or --config FILE");
  }
  return {};
}

// The --span options: each parsed and named once; with --follow, followed.
Result<void> take_spans(const CommandLine& v, Config& config) {
  if (!v.spans.empty() && !v.config_file.empty()) {
    return bad_input("--span with --config: a reload would drop it",
                     "put the span in the --config file's spans");
  }
  auto spans = spans_of(v.spans, v.follow);
  if (!spans) return std::unexpected(spans.error());
  for (const auto& span : *spans) {
    if (span.start.binary.empty() && v.pid <= 0) {
      return bad_input(fmt::format("--span \"{}\" names no binary", span.text),
                       "give -p PID, or write BINARY:FUNCTION:POINT");
    }
  }
  config.spans = std::move(*spans);
  config.span_capacity = v.span_capacity;
  if (v.follow && !config.spans.empty()) {
    config.spans_followed = true;
    config.span_room = static_cast<uint32_t>(config.spans.size());
  }
  if (!config.spans.empty() && v.list) {
    return bad_input("-l lists TARGETs' functions, not spans", "leave --span out with -l");
  }
  return {};
}

// The TARGETs (or programs to follow), the --config file, -p.
Result<void> take_targets(const CommandLine& v, Config& config) {
  config.config_file = v.config_file;
  config.check_config = v.check_config;
  if (v.follow_hold_ms > 0 && !v.follow && v.config_file.empty()) {
    return bad_input("--follow-hold stops the processes that start a followed program",
                     "add --follow (or --config FILE), or leave --follow-hold out");
  }
  config.follow_hold = std::chrono::milliseconds(v.follow_hold_ms);
  if (!v.test_follow_delay.empty()) {
    unsigned long long ms = 0, inode = 0;
    int used = 0;
    const char* text = v.test_follow_delay.c_str();
    if (std::sscanf(text, "%llu%n", &ms, &used) != 1 || ms > 10000) {
      return bad_input("--test-follow-delay " + v.test_follow_delay + ": not MS[:INODE]");
    }
    if (text[used] == ':') {
      int more = 0;
      if (std::sscanf(text + used + 1, "%llu%n", &inode, &more) != 1 ||
          text[used + 1 + more] != '\0') {
        return bad_input("--test-follow-delay " + v.test_follow_delay + ": not MS[:INODE]");
      }
      config.test_follow_delay_inode = inode;
    } else if (text[used] != '\0') {
      return bad_input("--test-follow-delay " + v.test_follow_delay + ": not MS[:INODE]");
    }
    config.test_follow_delay = std::chrono::milliseconds(ms);
  }
  if (v.follow) {
    auto followed = follow_targets_of(v.targets, v.regex);
    if (!followed) return std::unexpected(followed.error());
    config.follow_targets = std::move(*followed);
    // A followed program runs in many containers: each is a series.
    if (v.by.empty()) config.series_by = kSeriesByCgroup;
  } else {
    config.targets = v.targets;
  }
  if (v.pid > 0) config.pid = v.pid;
  return {};
}

// The intervals, the display unit, the output's switches and the limits on
// functions.
void take_output_and_limits(const CommandLine& v, Config& config) {
  config.interval = std::chrono::milliseconds(static_cast<int64_t>(v.interval_s * 1000));
  if (v.duration_s > 0) {
    config.duration = std::chrono::milliseconds(static_cast<int64_t>(v.duration_s * 1000));
  }
  if (v.msec) {
    config.unit_ns = 1000000;
    config.unit_name = "msec";
  } else if (v.nsec) {
    config.unit_ns = 1;
    config.unit_name = "nsec";
  }
  config.timestamp = v.timestamp;
  config.json = v.json;
  config.verbose = v.verbose;
  config.list = v.list;
  config.regex = v.regex;
  config.merge = v.merge;
  config.max_functions = v.max_functions;
  config.late_functions = v.late_functions;
  config.wait_for_library = v.wait_for_library;
}

// --wait-for-library, --mode, --auto-threshold, --exit-probes, and each
// TARGET's form.
Result<void> take_probe_choices(const CommandLine& v, Config& config) {
  if (v.wait_for_library && v.pid <= 0) {
    return bad_input("--wait-for-library needs -p PID",
                     "without -p, a library is found by path or through the loader");
  }
  config.auto_threshold = v.auto_threshold;
  if (v.mode == "events")
    config.mode = ModeChoice::kEvents;
  else if (v.mode == "kernel")
    config.mode = ModeChoice::kKernel;
  if (v.exit_probes == "uretprobe")
    config.exit_probes = ExitProbeChoice::kReturnProbe;
  else if (v.exit_probes == "ret")
    config.exit_probes = ExitProbeChoice::kRetInstructions;
  for (const auto& target : v.targets) {
    if (target.find(':') == std::string::npos) {
      return bad_input("TARGET \"" + target + "\" has no ':'",
                       "write BINARY:FUNCTION, lib:FUNCTION, or :FUNCTION with -p");
    }
  }
  return {};
}

}  // namespace

// The steps in the order their refusals are checked: the first wrong input
// is the one named.
Result<Config> finish_config(const CommandLine& v) {
  Config config;
  if (auto taken = take_series_and_slow_calls(v, config); !taken) {
    return std::unexpected(taken.error());
  }
  if (auto checked = check_target_sources(v); !checked) return std::unexpected(checked.error());
  if (auto taken = take_spans(v, config); !taken) return std::unexpected(taken.error());
  if (auto taken = take_targets(v, config); !taken) return std::unexpected(taken.error());
  take_output_and_limits(v, config);
  if (auto taken = take_probe_choices(v, config); !taken) return std::unexpected(taken.error());
  return config;
}

Result<std::vector<SpanSpec>> spans_of(const std::vector<std::string>& texts, bool followed) {
  std::vector<SpanSpec> spans;
  for (const auto& text : texts) {
    auto span = parse_span(text);
    if (!span) return std::unexpected(span.error());
    for (const auto& other : spans) {
      if (other.name == span->name) {
        return bad_input(fmt::format("two spans are named {}", span->name),
                         "give each span its own NAME");
      }
    }
    if (followed) {
      const std::string& program = span->start.binary;
      if (program.empty() ||
          (program.find('/') != std::string::npos && !program.starts_with('/'))) {
        return bad_input(
            fmt::format("span \"{}\": a followed span's START names its program", text),
            "write PROGRAM:FUNCTION:POINT, PROGRAM an absolute path as the container sees it or "
            "an executable's file name");
      }
      if (span->end.binary != program) {
        return bad_input(
            fmt::format("span \"{}\": a followed span's END is in its START's program", text),
            "leave END's BINARY out");
      }
    }
    spans.push_back(std::move(*span));
  }
  return spans;
}

Result<std::vector<FollowTarget>> follow_targets_of(const std::vector<std::string>& targets,
                                                    bool regex) {
  std::vector<FollowTarget> followed;
  for (const auto& target : targets) {
    auto spec = parse_target(target, regex);
    if (!spec) return std::unexpected(spec.error());
    const std::string& program = spec->binary;
    if (program.empty() || (program.find('/') != std::string::npos && !program.starts_with('/'))) {
      return bad_input(fmt::format("--follow TARGET \"{}\" needs its program as the containers "
                                   "see it",
                                   target),
                       "write /path/in/the/container:FUNCTION, or PROGRAM-NAME:FUNCTION");
    }
    auto same = std::find_if(followed.begin(), followed.end(),
                             [&](const FollowTarget& t) { return t.program == program; });
    if (same == followed.end()) {
      followed.push_back(FollowTarget{.program = program, .regex = regex});
      same = followed.end() - 1;
    }
    same->functions.push_back(spec->function);
  }
  return followed;
}

void apply_agent_settings(const AgentConfig& agent, CommandLine& values) {
  const AgentSettings& s = agent.settings;
  if (values.by.empty()) values.by = s.by.empty() ? std::vector<std::string>{"cgroup"} : s.by;
  if (values.slowest == 0) values.slowest = s.slowest;
  if (values.interval_s == 0 && s.interval) values.interval_s = s.interval->count() / 1000.0;
  if (values.series_expiry.empty() && s.series_expiry) {
    values.series_expiry = std::to_string(s.series_expiry->count()) + "ms";
  }
  if (values.go_goroutines == 0) values.go_goroutines = s.go_goroutines;
}

}  // namespace funclatency
