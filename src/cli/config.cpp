#include "cli/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "bpf/funclatency.h"
}

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

Result<uint64_t> parse_duration_ns(std::string_view text) {
  auto fail = [&text] {
    return bad_input(fmt::format("\"{}\" is not a duration", text),
                     "write a number and a unit: 800ns, 250us, 10ms, 1.5s");
  };
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    digits++;
  }
  const std::string number(text.substr(0, digits));
  const std::string_view unit = text.substr(digits);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
    return fail();
  }
  double scale = 0;
  if (unit == "ns") scale = 1;
  if (unit == "us") scale = 1e3;
  if (unit == "ms") scale = 1e6;
  if (unit == "s") scale = 1e9;
  if (scale == 0) return fail();
  const double ns = std::strtod(number.c_str(), nullptr) * scale;
  if (!(ns < 1e18)) return fail();
  return static_cast<uint64_t>(ns + 0.5);
}

Result<Config> finish_config(const CommandLine& v) {
  Config config;
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
  config.kernel_slots = v.kernel_slots;
  config.cgroups = v.cgroups;
  config.slowest = v.slowest;
  if (!v.slower_than.empty()) {
    auto slower_than = parse_duration_ns(v.slower_than);
    if (!slower_than) return std::unexpected(slower_than.error());
    config.slower_than_ns = *slower_than;
  }
  if (config.cgroups.size() > FL_MAX_CGROUP_FILTERS) {
    return bad_input(fmt::format("{} cgroups given with -c, at most {}", config.cgroups.size(),
                                 FL_MAX_CGROUP_FILTERS));
  }

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
  if (v.targets.empty() && v.config_file.empty() && !v.calibrate) {
    return bad_input("no TARGET given", "write BINARY:FUNCTION (see --help), or --config FILE");
  }
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
    if (v.by.empty()) config.series_by = FL_BY_CGROUP;
  } else {
    config.targets = v.targets;
  }
  if (v.pid > 0) config.pid = v.pid;
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
  return config;
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
}

}  // namespace funclatency
