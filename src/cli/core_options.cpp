// funclatency's own options, registered with CLI11 into a CommandLine (its
// raw values; finish_config in config.cpp turns them into a Config). Compiled
// in the command line's one unit (command_line.h).
#include <CLI/CLI.hpp>
#include <cstring>

#include "cli/config.h"
#include "collect/value_series.h"
#include "funclatency_version.h"  // generated: cmake/VersionHeader.cmake

namespace funclatency {

namespace {

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
  app.add_option("--series-expiry", v.series_expiry,
                 "With --by: a series whose processes are gone (the pid exited, the cgroup\n"
                 "is empty or removed) and that had no call for DURATION is reported once\n"
                 "more, then dropped: room for new series (default: 3 intervals, at least\n"
                 "30s; a pid series by default ends once its process exited)")
      ->type_name("DURATION");
  app.add_option("--kernel-slots", v.kernel_slots,
                 "Functions aggregated in the kernel at once (per-CPU histograms); others\n"
                 "stay in events mode until a slot is free (default 64; with functions\n"
                 "attached later, those known at start and 16 more, at most 64)")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--go-goroutines", v.go_goroutines,
                 "Go code: at most N goroutines inside traced calls at once; an entry\n"
                 "past them is counted lost (default 8192; kernel memory as they enter)")
      ->check(CLI::Range(1u, kMaxGoGoroutines))
      ->type_name("N");
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

// Latency across calls: --span and the open-span map's size.
void add_span_options(CLI::App& app, CommandLine& v) {
  app.add_option("--span", v.spans,
                 "A latency across calls (repeatable): NAME=START -> END [any-process].\n"
                 "START, END: [BINARY:]FUNCTION:POINT (END's BINARY defaults to START's);\n"
                 "POINT entry or return (matched by the thread), ret (the return value) or\n"
                 "argN (argument N at entry, 0-5; matched by value, within one process\n"
                 "unless any-process). A request's life in nginx:\n"
                 "  'request=/usr/sbin/nginx:ngx_http_create_request:ret ->\n"
                 "   ngx_http_free_request:arg0'")
      ->allow_extra_args(false)  // one SPAN per --span: a TARGET may follow
      ->type_name("SPAN");
  app.add_option("--span-capacity", v.span_capacity,
                 "Spans open at once the kernel holds (a start with no room is counted lost)")
      ->check(CLI::Range(16u, 4194304u))
      ->capture_default_str();
}

// Following programs into containers, and the node agent's --config.
void add_agent_options(CLI::App& app, CommandLine& v) {
  app.add_flag("--follow", v.follow,
               "Follow each TARGET's program into every container: PROGRAM is a path as the\n"
               "processes see it (/app/server), or an executable's name; every process on\n"
               "the host that runs it, now or started later, is traced (one probe set per\n"
               "file, shared by the containers of an image). Series by cgroup by default");
  app.add_option("--follow-hold", v.follow_hold_ms,
                 "With --follow/--config: stop a process that starts a followed program whose\n"
                 "file has no probes yet, from its exec until they are in (its first call\n"
                 "is timed), this many milliseconds at most; 0: never stop one")
      ->check(CLI::Range(0u, 10000u))
      ->capture_default_str();
  // The tests' stand-in for a busy agent: no help line, no completion.
  app.add_option("--test-follow-delay", v.test_follow_delay)->group("");
  app.add_option("--config", v.config_file,
                 "Run as a node agent from a YAML file of targets and exporters (see the man\n"
                 "page); SIGHUP re-reads it, keeping what did not change")
      ->type_name("FILE");
  app.add_flag("--check-config", v.check_config,
               "With --config: check the file, say what it follows, and exit (0: valid)");
}

}  // namespace

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
  add_agent_options(app, v);
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
  add_span_options(app, v);
}

}  // namespace funclatency
