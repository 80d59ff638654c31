// funclatency: how long does this function take? Entry and return uprobes
// time every call; the durations become a log2 histogram with percentiles.
// main() is the only place that prints errors and picks exit codes.
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "cli/config.h"
#include "collect/aggregator.h"
#include "collect/calibration.h"
#include "collect/trace_session.h"
#include "output/console_sink.h"
#include "output/json_sink.h"
#include "output/otlp/otlp_cli_options.h"
#include "output/otlp/otlp_module.h"
#include "output/prometheus/prometheus_cli.h"
#include "output/prometheus/prometheus_module.h"
#include "probe/bpf_object.h"
#include "probe/library_watch.h"
#include "probe/uprobe_links.h"
#include "symbols/elf_symbol_resolver.h"
#include "symbols/target_spec.h"

namespace funclatency {
namespace {

constexpr const char* kExamples = R"(
Examples:
  funclatency /usr/bin/myapp:handle_request       time one function, all processes
  funclatency -p 1234 :handle_request              ... of the binary PID 1234 runs
  funclatency -p 1234 c:malloc                     malloc in that process's libc
  funclatency -p 1234 --wait-for-library myplugin:handle
                                                   waits for 1234 to dlopen libmyplugin
  funclatency -i 2 -m ./server:'ns::Db::query*'    every C++ overload, msec, every 2s
  funclatency -r 'libssl:^SSL_(read|write)$'       regex over a library
  funclatency --json -d 10 ./app:slow_op           JSON lines for 10 seconds
  funclatency -l 'c:str*'                          list what a pattern matches

Exit status: 0 success, 1 runtime failure, 2 bad usage or input.
)";

bool g_verbose = false;  // read only by the libbpf print callback

int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
  if (!g_verbose || level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

void report_error(const Error& error) {
  std::fprintf(stderr, "funclatency: %s\n", error.message().c_str());
}

Result<std::vector<TargetSpec>> parse_targets(const Config& config) {
  std::vector<TargetSpec> specs;
  for (const auto& target : config.targets) {
    auto spec = parse_target(target, config.regex);
    if (!spec) return std::unexpected(spec.error());
    if (spec->binary.empty() && !config.pid) {
      return bad_input(fmt::format("TARGET \"{}\" names no binary", target),
                       "give -p PID, or write BINARY:FUNCTION");
    }
    specs.push_back(std::move(*spec));
  }
  return specs;
}

ResolveOptions resolve_options(const Config& config) {
  ResolveOptions options;
  options.pid = config.pid;
  options.max_matches = config.max_functions;
  return options;
}

// What the targets name: every function found now, each once, and (with
// -p) the targets whose library the process has yet to load.
struct Targets {
  std::vector<ProbeSite> sites;
  std::vector<TargetSpec> waiting;
};

// `verbose` hears what a pattern matched but could not be probed, and why.
Result<Targets> resolve_all(const Config& config, ElfSymbolResolver& resolver,
                            const std::function<void(const std::string&)>& verbose) {
  auto specs = parse_targets(config);
  if (!specs) return std::unexpected(specs.error());
  Targets targets;
  std::set<std::pair<std::string, uint64_t>> seen;
  for (const auto& spec : *specs) {
    const bool unknown_library = config.pid && should_wait_for_library(spec, *config.pid);
    if (unknown_library && config.wait_for_library) {
      targets.waiting.push_back(spec);
      continue;
    }
    auto found = resolver.resolve_detailed(spec, resolve_options(config));
    if (!found) {
      Error error = found.error();
      if (unknown_library) {
        error.hint += (error.hint.empty() ? "" : "; ") +
                      fmt::format("if process {} loads it later (dlopen), add --wait-for-library",
                                  *config.pid);
      }
      return std::unexpected(std::move(error));
    }
    for (const auto& refused : found->refused) {
      verbose(fmt::format("skipping {} in {}: {}", refused.symbol, refused.binary, refused.reason));
    }
    for (auto& site : found->sites) {
      if (seen.insert({site.binary, site.file_offset}).second) {
        targets.sites.push_back(std::move(site));
      }
    }
  }
  if (targets.sites.size() > config.max_functions) {
    return bad_input(fmt::format("the TARGETs match {} functions, more than --max-functions {}",
                                 targets.sites.size(), config.max_functions),
                     "narrow the pattern, or raise --max-functions");
  }
  return targets;
}

std::string describe_waiting(const std::vector<TargetSpec>& waiting) {
  std::string names;
  for (const auto& spec : waiting) {
    names += (names.empty() ? "" : ", ") + spec.binary + ":" + spec.function;
  }
  return names;
}

int run_calibration() {
  libbpf_set_print(libbpf_print);
  auto calibration = calibrate();
  if (!calibration) {
    report_error(calibration.error());
    return calibration.error().exit_code();
  }
  std::fputs(format_calibration(*calibration).c_str(), stdout);
  return 0;
}

int list_targets(const Config& config) {
  auto specs = parse_targets(config);
  if (!specs) {
    report_error(specs.error());
    return specs.error().exit_code();
  }
  ElfSymbolResolver resolver;
  auto listed = list_functions(resolver, *specs, resolve_options(config));
  if (!listed) {
    report_error(listed.error());
    return listed.error().exit_code();
  }
  std::printf("%-40s %-18s %8s  %s\n", "FUNCTION", "ADDRESS", "SIZE", "BINARY");
  for (const auto& function : *listed) {
    std::string note =
        function.refused_reason.empty() ? "" : "  (not probed: " + function.refused_reason + ")";
    std::printf("%-40s 0x%016llx %8llu  %s%s\n", function.symbol.c_str(),
                static_cast<unsigned long long>(function.address),
                static_cast<unsigned long long>(function.size), function.binary.c_str(),
                note.c_str());
  }
  return 0;
}

std::string describe_targets(const std::vector<AttachedSite>& sites) {
  if (sites.size() == 1) return fmt::format("\"{}\"", sites[0].symbol);
  return fmt::format("\"{}\" and {} more", sites[0].symbol, sites.size() - 1);
}

const char* mode_statement(ModeChoice mode) {
  switch (mode) {
    case ModeChoice::kEvents:
      return "mode events: one ring buffer record per call";
    case ModeChoice::kKernel:
      return "mode kernel: histograms aggregated in the kernel";
    case ModeChoice::kAuto:
      break;
  }
  return "mode auto: one ring buffer record per call; a function above the auto threshold "
         "switches to in-kernel aggregation";
}

int run(const Config& config, const PrometheusCliValues& prometheus_values,
        const OtlpCliValues& otlp_values) {
  g_verbose = config.verbose;
  libbpf_set_print(libbpf_print);
  auto verbose = [&config](const std::string& line) {
    if (config.verbose) std::fprintf(stderr, "funclatency: %s\n", line.c_str());
  };

  if (config.list) return list_targets(config);
  // Kept to the end of the run: a library loaded later is resolved and
  // planned by the same objects, and tearing a big symbol table down would
  // only delay the start.
  ElfSymbolResolver resolver;
  ProbePlanner planner;
  auto targets = resolve_all(config, resolver, verbose);
  if (!targets) {
    report_error(targets.error());
    return targets.error().exit_code();
  }
  const std::vector<ProbeSite>* sites = &targets->sites;

  // Sinks that can fail on bad input (a port in use) come before any probe.
  std::vector<std::unique_ptr<Sink>> sinks;
  if (config.json) {
    sinks.push_back(std::make_unique<JsonSink>(stdout));
  } else {
    ConsoleOptions console{config.unit_name, config.timestamp, config.interval.count() > 0};
    sinks.push_back(std::make_unique<ConsoleSink>(stdout, console));
  }

  std::vector<ProbePlan> plans;
  for (const auto& site : *sites) {
    auto plan = planner.plan(site, config.exit_probes);
    if (!plan) {
      report_error(plan.error());
      return plan.error().exit_code();
    }
    plans.push_back(std::move(*plan));
  }

  std::vector<Sink*> live_sinks;
  auto prometheus = load_prometheus_sink(prometheus_values);
  if (!prometheus) {
    report_error(prometheus.error());
    return prometheus.error().exit_code();
  }
  if (*prometheus) {
    live_sinks.push_back(prometheus->get());
    verbose(fmt::format("serving Prometheus metrics on {}", prometheus_values.listen));
    sinks.push_back(std::move(*prometheus));
  }

  if (otlp_values.enabled) {
    auto otlp = load_otlp_sink(otlp_values, config.pid.value_or(0), [](std::string_view line) {
      std::fprintf(stderr, "funclatency: %.*s\n", static_cast<int>(line.size()), line.data());
    });
    if (!otlp) {
      report_error(otlp.error());
      return otlp.error().exit_code();
    }
    live_sinks.push_back(otlp->get());
    sinks.push_back(std::move(*otlp));
  }

  if (config.calibrate) return run_calibration();
  std::optional<Calibration> calibration;
  if (config.subtract_overhead) {
    auto measured = calibrate();
    if (!measured) {
      report_error(measured.error());
      return measured.error().exit_code();
    }
    calibration = *measured;
    verbose(format_calibration(*calibration));
  }

  LoadOptions load;
  load.unit_ns = config.unit_ns;
  load.filter_tgid = config.pid ? static_cast<uint32_t>(*config.pid) : 0;
  // Room for functions of libraries loaded later, when a target waits for one.
  load.num_functions =
      static_cast<uint32_t>(sites->size()) + (targets->waiting.empty() ? 0 : config.late_functions);
  load.initial_mode = config.mode == ModeChoice::kKernel ? FL_MODE_KERNEL : FL_MODE_EVENTS;
  // Functions attached later may need either kind of exit.
  load.return_program = !targets->waiting.empty();
  load.exit_program = !targets->waiting.empty();
  for (const auto& plan : plans) {
    (plan.use_ret_instructions ? load.exit_program : load.return_program) = true;
    load.function_flags.push_back(plan.fn_flags);
    load.function_subtract_ns.push_back(calibration ? calibration->for_plan(plan) : 0);
  }
  auto probes = load_and_attach(load, *sites, plans, config.pid);
  if (!probes) {
    report_error(probes.error());
    return probes.error().exit_code();
  }
  verbose(fmt::format("{} links ({})", probes->links.link_count(),
                      probes->method == AttachMethod::kUprobeMulti
                          ? "uprobe_multi: one per file and probe kind"
                          : "perf-event uprobes: one per probe"));
  for (const auto& site : probes->links.sites()) {
    verbose(fmt::format(
        "{}: entry probe at {}:0x{:x}{}; exit: {}", site.symbol, site.binary, site.offset,
        site.entry_skip ? fmt::format(" (after endbr64, +{})", site.entry_skip) : std::string(),
        site.exit_description));
  }

  const auto& dropped = probes->links.dropped();
  if (!dropped.empty()) {
    std::string names;
    for (size_t i = 0; i < dropped.size() && i < 5; i++)
      names += (i ? ", " : "") + dropped[i].symbol;
    if (dropped.size() > 5) names += fmt::format(" and {} more", dropped.size() - 5);
    std::fprintf(stderr, "funclatency: skipping %zu function%s the kernel cannot probe: %s\n",
                 dropped.size(), dropped.size() == 1 ? "" : "s", names.c_str());
    for (const auto& function : dropped) verbose(function.symbol + ": " + function.reason);
  }
  const auto& traced = probes->links.sites();

  // A group per traced function (one for all with --merge); dropped
  // functions report nowhere.
  std::vector<ReportGroup> groups;
  std::vector<uint32_t> group_of_function(probes->object->num_functions(), kNoGroup);
  for (const auto& site : traced) {
    if (config.merge && !groups.empty()) {
      group_of_function[site.fn_id] = 0;
      continue;
    }
    group_of_function[site.fn_id] = static_cast<uint32_t>(groups.size());
    groups.push_back({site.symbol, site.binary, config.pid.value_or(0)});
  }
  if (config.merge && traced.size() > 1) {
    groups[0].symbol = fmt::format("{} functions matching {}", traced.size(), config.targets[0]);
  }
  Aggregator aggregator(std::move(groups), std::move(group_of_function), config.unit_ns,
                        std::chrono::system_clock::now());

  WatchOptions watch_options;
  watch_options.pid = config.pid.value_or(0);
  watch_options.resolve = resolve_options(config);
  watch_options.exit_probes = config.exit_probes;
  watch_options.initial_mode = load.initial_mode;
  watch_options.method = probes->method;
  watch_options.first_free_fn_id = static_cast<uint32_t>(sites->size());
  watch_options.subtract_ns = [&calibration](const ProbePlan& plan) -> uint64_t {
    return calibration ? calibration->for_plan(plan) : 0;
  };
  std::set<std::pair<std::string, uint64_t>> traced_offsets;
  for (const auto& site : *sites) traced_offsets.insert({site.binary, site.file_offset});
  LibraryWatch library_watch(targets->waiting, std::move(watch_options), std::move(traced_offsets),
                             resolver, planner);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, signo);
  int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) {
    report_error(Error{ErrorKind::kRuntime, "create a signalfd", errno, {}});
    return 1;
  }

  SessionOptions session_options;
  session_options.interval = config.interval;
  session_options.duration = config.duration;
  session_options.pid = config.pid;
  session_options.mode = config.mode;
  session_options.policy.to_kernel_calls_per_sec = config.auto_threshold;
  session_options.policy.to_events_calls_per_sec = config.auto_threshold / 4;
  if (config.verbose) session_options.verbose = verbose;
  if (!library_watch.empty()) {
    session_options.attach_late = [&]() -> Result<std::vector<uint32_t>> {
      auto polled = library_watch.poll(*probes->object, probes->links);
      if (!polled) return std::unexpected(polled.error());
      for (const auto& note : polled->notes)
        std::fprintf(stderr, "funclatency: %s\n", note.c_str());
      std::vector<uint32_t> added;
      for (const auto& site : polled->attached) {
        aggregator.add_function(site.fn_id, {site.symbol, site.binary, config.pid.value_or(0)},
                                config.merge);
        verbose(fmt::format("{}: entry probe at {}:0x{:x}; exit: {}", site.symbol, site.binary,
                            site.offset, site.exit_description));
        added.push_back(site.fn_id);
      }
      return added;
    };
  }
  session_options.live_sinks = live_sinks;
  std::vector<Sink*> sink_pointers;
  for (auto& sink : sinks) sink_pointers.push_back(sink.get());
  TraceSession session(*probes->object, aggregator, sink_pointers, session_options, signal_fd,
                       [&probes] { probes->links.detach_all(); });

  if (traced.empty()) {
    std::fprintf(stderr,
                 "Waiting for process %d to load the library of %s (%s)... Hit Ctrl-C to end.\n",
                 *config.pid, describe_waiting(library_watch.pending()).c_str(),
                 mode_statement(config.mode));
  } else {
    std::string waiting;
    if (!library_watch.empty()) {
      waiting = fmt::format("; waiting for process {} to load the library of {}", *config.pid,
                            describe_waiting(library_watch.pending()));
    }
    std::fprintf(stderr, "Tracing %zu function%s for %s%s (%s)... Hit Ctrl-C to end.\n",
                 traced.size(), traced.size() == 1 ? "" : "s", describe_targets(traced).c_str(),
                 waiting.c_str(), mode_statement(config.mode));
  }
  auto stopped = session.run();
  ::close(signal_fd);
  if (!library_watch.empty()) {
    std::fprintf(stderr, "funclatency: process %d never loaded the library of %s\n", *config.pid,
                 describe_waiting(library_watch.pending()).c_str());
  }
  if (!stopped) {
    report_error(stopped.error());
    return stopped.error().exit_code();
  }
  return 0;
}

}  // namespace
}  // namespace funclatency

int main(int argc, char** argv) {
  using namespace funclatency;
  // Block the stop signals before any thread exists, so every thread
  // inherits the mask and only the session's signalfd sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, signo);
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  // A closed stdout shows up as a failed write, which stops the run cleanly.
  signal(SIGPIPE, SIG_IGN);

  // --calibrate alone needs no TARGET, which the parser otherwise requires.
  if (argc == 2 && std::string_view(argv[1]) == "--calibrate") return run_calibration();

  CLI::App app{
      "funclatency: time every call of a function with eBPF uprobes, and print the\n"
      "latency distribution as a log2 histogram with percentiles.",
      "funclatency"};
  app.footer(kExamples);
  app.get_formatter()->column_width(34);
  CommandLine values;
  add_core_options(app, values);
  PrometheusCliValues prometheus_values;
  add_prometheus_options(app, prometheus_values);
  OtlpCliValues otlp_values;
  add_otlp_options(app, otlp_values);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "funclatency: %s (see --help)\n", e.what());
    return 2;
  }
  auto config = finish_config(values);
  if (!config) {
    report_error(config.error());
    return config.error().exit_code();
  }
  return run(*config, prometheus_values, otlp_values);
}
