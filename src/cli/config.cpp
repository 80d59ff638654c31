#include "cli/config.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "bpf/funclatency.h"
}

#include "funclatency_version.h"  // generated: cmake/VersionHeader.cmake
#include "symbols/target_spec.h"

namespace funclatency {

// Why and who: the split of each call, series, the cgroup filter, and the
// kernel slots the aggregation may use.
void add_attribution_options(CLI::App& app, CommandLine& v) {
  app.add_flag("--cpu-split", v.cpu_split,
               "Split each call's time into on-CPU, runnable (waiting for a CPU) and\n"
               "blocked (sleeping), from the scheduler's context switches");
  app.add_flag("--self", v.self_time,
               "Also a histogram of each function's self (exclusive) time: a call's time\n"
               "less that of the traced calls it made directly that returned (exported\n"
               "as the metric function_self_time_ms / ebpf_function_self_time_ms)");
  app.add_option("--by", v.by,
                 "One histogram per function and pid, comm and/or cgroup (comma-separated):\n"
                 "who is slow. Or by a value of the call (one per run, with the others):\n"
                 "  retval[:RULE]  its outcome; RULE zero (default: 0 is ok, else error),\n"
                 "    errno (>= 0 ok, < 0 its errno: -EAGAIN), null (a pointer: NULL is\n"
                 "    null, else ok), bool (true/false), raw (the int), raw64 (the register),\n"
                 "    go-error[:W] (Go: an error result nil is ok, else error; W = its word\n"
                 "    among the results, 0 when it is the only one, 1 for (int, error))\n"
                 "  argN[:BUCKETS] integer argument N (arg0 is the first) read at entry;\n"
                 "    BUCKETS log2 (default: [64, 128) ranges), raw (the value), raw32 (an int)")
      ->delimiter(',')
      ->check([](const std::string& key) -> std::string {
        if (key == "pid" || key == "comm" || key == "cgroup") return {};
        if (!is_value_key(key)) {
          return key + ": write pid, comm, cgroup, retval[:RULE] or argN[:BUCKETS]";
        }
        auto spec = parse_value_key(key);
        // CLI11 says "--by: " before it.
        return spec ? std::string() : spec.error().message().substr(std::strlen("--by "));
      })
      ->type_name("KEY[,KEY]");
  app.add_option("--max-series", v.max_series,
                 "With --by: at most this many series; the calls of more go to `other`")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  app.add_option("--kernel-slots", v.kernel_slots,
                 "Functions aggregated in the kernel at once (per-CPU histograms); others\n"
                 "stay in events mode until a slot is free")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  app.add_option("-c,--cgroup", v.cgroups,
                 "Trace only tasks in this cgroup v2 directory or below it (repeatable)")
      ->type_name("PATH");
  app.add_option("--slowest", v.slowest,
                 "Show the K slowest calls of each function and interval with pid, tid and\n"
                 "their user stack (also exemplars in JSON, OTLP and Prometheus)")
      ->check(CLI::Range(size_t{1}, size_t{100}))
      ->type_name("K");
  app.add_option("--slower-than", v.slower_than,
                 "Print each call that takes at least DURATION (10ms, 250us) as it ends;\n"
                 "its stack too with -v")
      ->type_name("DURATION");
}

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

void add_core_options(CLI::App& app, CommandLine& v, bool targets_required) {
  // The project version from CMake, and the git revision of a checkout build.
  // main() prints it and exits 0 when CLI11 reports it (CLI::CallForVersion).
  app.set_version_flag("--version", "funclatency " FUNCLATENCY_VERSION_TEXT,
                       "Print the version (and the git revision it was built from) and exit");
  app.add_flag("--calibrate", v.calibrate,
               "Measure what the probes add to a duration on this machine, print it, and exit\n"
               "(alone: funclatency --calibrate)");
  app.add_flag("--subtract-overhead", v.subtract_overhead,
               "Calibrate first, then take the probes' own cost off every duration");
  auto* target =
      app.add_option("TARGET", v.targets,
                     "BINARY:FUNCTION, lib:FUNCTION, or :FUNCTION with -p. BINARY is a path or a\n"
                     "program on PATH; FUNCTION may be a glob (*, ?) or, with -r, a regex.\n"
                     "With --follow: PROGRAM:FUNCTION, PROGRAM as containers see it");
  target->required(targets_required);
  app.add_flag("--follow", v.follow,
               "Follow each TARGET's program into every container: PROGRAM is a path as the\n"
               "processes see it (/app/server), or an executable's name; every process on\n"
               "the host that runs it, now or started later, is traced (one probe set per\n"
               "file, shared by the containers of an image). Series by cgroup by default");
  app.add_option("--config", v.config_file,
                 "Run as a node agent from a YAML file of targets and exporters (see the man\n"
                 "page); SIGHUP re-reads it, keeping what did not change")
      ->type_name("FILE");
  app.add_flag("--check-config", v.check_config,
               "With --config: check the file, say what it follows, and exit (0: valid)");
  app.add_option("-p,--pid", v.pid, "Trace only this process; exit when it exits")
      ->check(CLI::PositiveNumber);
  app.add_option("-i,--interval", v.interval_s, "Print a histogram every SECS seconds")
      ->check(CLI::PositiveNumber)
      ->type_name("SECS");
  app.add_option("-d,--duration", v.duration_s, "Stop after SECS seconds")
      ->check(CLI::PositiveNumber)
      ->type_name("SECS");
  auto* usec = app.add_flag("-u,--microseconds", v.usec, "Histogram in microseconds (default)");
  auto* msec = app.add_flag("-m,--milliseconds", v.msec, "Histogram in milliseconds");
  auto* nsec = app.add_flag("-n,--nanoseconds", v.nsec, "Histogram in nanoseconds");
  usec->excludes(msec, nsec);
  msec->excludes(nsec);
  app.add_flag("-T,--timestamp", v.timestamp, "Print a timestamp with each interval");
  app.add_option("--mode", v.mode,
                 "How durations reach the histogram: events (one ring buffer record per call),\n"
                 "kernel (aggregated in the kernel), auto (events, switching hot functions\n"
                 "to kernel)")
      ->check(CLI::IsMember({"auto", "events", "kernel"}))
      ->capture_default_str();
  app.add_option("--auto-threshold", v.auto_threshold,
                 "auto mode: calls/s above which a function is aggregated in the kernel")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--exit-probes", v.exit_probes,
                 "How a call's end is seen: uretprobe (fast; a C++ exception unwinding\n"
                 "through it terminates the process), ret (a probe on each ret instruction:\n"
                 "exception-safe, ~3-4 us more a call here), auto (ret where the binary has C++\n"
                 "exception tables)")
      ->check(CLI::IsMember({"auto", "uretprobe", "ret"}))
      ->capture_default_str();
  app.add_flag("--json", v.json, "One JSON object per function per interval, and totals at exit");
  app.add_flag("-v,--verbose", v.verbose, "Say where probes go and every mode switch");
  app.add_flag("-l,--list", v.list, "List the functions the TARGETs match, and exit");
  app.add_flag("-r,--regex", v.regex, "FUNCTION is a regular expression");
  app.add_flag("--merge", v.merge, "One histogram for all matched functions");
  app.add_option("--max-functions", v.max_functions,
                 "Refuse patterns matching more functions than this")
      ->capture_default_str();
  app.add_flag("--wait-for-library", v.wait_for_library,
               "With -p: a library nothing can find yet is waited for until the process\n"
               "loads it (dlopen), instead of an error");
  app.add_option("--late-functions", v.late_functions,
                 "With --wait-for-library: room for this many functions of libraries loaded "
                 "later")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  add_attribution_options(app, v);
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
