// funclatency: how long does this function take? Entry and return uprobes
// time every call; the durations become a log2 histogram with percentiles.
// main() is the only place that prints errors and picks exit codes.
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "agent/agent_config.h"
#include "agent/program_follower.h"
#include "cli/command_line.h"
#include "cli/config.h"
#include "cli/late_attacher.h"
#include "cli/messages.h"
#include "cli/privileges.h"
#include "cli/run_stages.h"
#include "cli/series.h"
#include "cli/span_plan.h"
#include "collect/aggregator.h"
#include "collect/calibration.h"
#include "collect/cgroup_names.h"
#include "collect/open_frames.h"
#include "collect/trace_session.h"
#include "common/read_file.h"
#include "common/unique_fd.h"
#include "offline/offline_module.h"
#include "output/console_sink.h"
#include "output/exporter_module.h"
#include "output/json_sink.h"
#include "output/otlp/otlp_module.h"
#include "output/prometheus/prometheus_cli.h"
#include "output/prometheus/prometheus_module.h"
#include "output/sink_fanout.h"
#include "probe/bpf_object.h"
#include "probe/exec_watch.h"
#include "probe/function_attacher.h"
#include "probe/library_watch.h"
#include "probe/span_links.h"
#include "probe/uprobe_links.h"
#include "probe/uprobe_warmup.h"
#include "stacks/stack_resolver.h"
#include "symbols/elf_symbol_resolver.h"
#include "symbols/target_spec.h"

namespace funclatency {
namespace {

// libbpf's print callback takes no user pointer, so -v picks one of two
// callbacks instead of setting a flag they would read: no state of ours.
int print_warnings(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

void route_libbpf_messages(bool verbose) {
  libbpf_set_print(verbose ? print_warnings : nullptr);  // nullptr: silent
}

// The signals that end a run.
sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, signo);
  return signals;
}

// --config: the exporters the file names, where the command line named none.
void apply_exporter_settings(const AgentSettings& settings, PrometheusCliValues& prometheus,
                             OtlpCliValues& otlp) {
  if (settings.prometheus && !prometheus.enabled) {
    prometheus.enabled = true;
    prometheus.listen = settings.prometheus->listen;
    prometheus.web_config = settings.prometheus->web_config;
  }
  if (settings.otlp && !otlp.enabled) {
    otlp.enabled = true;
    otlp.endpoint = settings.otlp->endpoint;
    if (!settings.otlp->protocol.empty()) otlp.protocol = settings.otlp->protocol;
  }
}

// Reports a stage's error; the exit code either way.
int exit_code(const Result<void>& done) {
  if (done) return 0;
  std::fprintf(stderr, "funclatency: %s\n", done.error().message().c_str());
  return done.error().exit_code();
}

// `funclatency report|diff ...`: offline views of --json output, no BPF, run
// by their module (offline/offline_module.h).
int run_offline(int argc, char** argv) {
  const std::string command = std::string("`funclatency ") + argv[1] + "`";
  auto entry = load_module_entry(
      kOfflineModuleFile, kOfflineModuleEntry, command,
      "it is installed with funclatency and built by a whole build (`cmake --build BUILD`; the "
      "demo builds the tracing binary alone); copy it with the binary",
      "reinstall funclatency, or rebuild it whole (`cmake --build BUILD`)");
  if (!entry) return exit_code(std::unexpected(entry.error()));
  return reinterpret_cast<OfflineModuleEntry>(*entry)(argc, argv);
}

Result<void> run_calibration() {
  auto calibration = calibrate();
  if (!calibration) return std::unexpected(calibration.error());
  std::fputs(format_calibration(*calibration).c_str(), stdout);
  return {};
}

Result<void> list_targets(const Config& config) {
  auto specs = parse_targets(config);
  if (!specs) return std::unexpected(specs.error());
  ElfSymbolResolver resolver;
  auto listed = list_functions(resolver, *specs, resolve_options(config));
  if (!listed) return std::unexpected(listed.error());
  ProbePlanner planner;
  std::vector<std::optional<ProbePlan>> plans;
  for (const auto& function : *listed) {
    if (!function.site) {
      plans.emplace_back();
      continue;
    }
    auto plan = planner.plan(*function.site, config.exit_probes);
    if (!plan) return std::unexpected(plan.error());
    plans.push_back(std::move(*plan));
  }
  std::fputs(format_listing(*listed, plans).c_str(), stdout);
  return {};
}

// Resolves one TARGET into `targets` (or sets it aside to wait for its
// library); `seen` keeps each function once.
Result<void> resolve_target(const Config& config, const TargetSpec& spec,
                            ElfSymbolResolver& resolver, const Messages& messages,
                            std::set<std::pair<std::string, uint64_t>>& seen,
                            PlannedTargets& targets) {
  const bool unknown_library = config.pid && should_wait_for_library(spec, *config.pid);
  if (unknown_library && config.wait_for_library) {
    targets.waiting.push_back(spec);
    return {};
  }
  auto found = resolver.resolve_detailed(spec, resolve_options(config));
  if (!found) {
    Error error = found.error();
    if (unknown_library) {
      error.hint +=
          (error.hint.empty() ? "" : "; ") +
          fmt::format("if process {} loads it later (dlopen), add --wait-for-library", *config.pid);
    }
    return std::unexpected(std::move(error));
  }
  for (const auto& refused : found->refused) {
    messages.detail(
        fmt::format("skipping {} in {}: {}", refused.symbol, refused.binary, refused.reason));
  }
  for (auto& site : found->sites) {
    if (seen.insert({site.binary, site.file_offset}).second) {
      targets.sites.push_back(std::move(site));
    }
  }
  return {};
}

// Every function the TARGETs name, each once, and where its probes go.
Result<PlannedTargets> plan_targets(const Config& config, ElfSymbolResolver& resolver,
                                    ProbePlanner& planner, const Messages& messages) {
  PlannedTargets targets;
  if (config.following()) return targets;  // attached as the programs are found
  auto specs = parse_targets(config);
  if (!specs) return std::unexpected(specs.error());
  std::set<std::pair<std::string, uint64_t>> seen;
  for (const auto& spec : *specs) {
    auto resolved = resolve_target(config, spec, resolver, messages, seen, targets);
    if (!resolved) return std::unexpected(resolved.error());
  }
  if (targets.sites.size() > config.max_functions) {
    return bad_input(fmt::format("the TARGETs match {} functions, more than --max-functions {}",
                                 targets.sites.size(), config.max_functions),
                     "narrow the pattern, or raise --max-functions");
  }
  if (auto lacking = refuse_options_code_lacks(config, targets.sites); !lacking) {
    return std::unexpected(lacking.error());
  }
  for (const auto& site : targets.sites) {
    auto plan = planner.plan(site, config.exit_probes);
    if (!plan) return std::unexpected(plan.error());
    targets.plans.push_back(std::move(*plan));
  }
  return targets;
}

// The sinks of a run; `live` also get the running totals (exporters). Each
// side is one fan-out, which makes a report's names valid UTF-8 once.
struct Sinks {
  std::vector<std::unique_ptr<Sink>> owned;
  std::unique_ptr<SinkFanout> every = std::make_unique<SinkFanout>();
  std::unique_ptr<SinkFanout> live_only = std::make_unique<SinkFanout>();
  std::vector<Sink*> live;

  std::vector<Sink*> all() const { return {every.get()}; }
  void add(std::unique_ptr<Sink> sink, bool is_live) {
    if (is_live) live_only->add(sink.get());
    if (is_live) live = {live_only.get()};
    every->add(sink.get());
    owned.push_back(std::move(sink));
  }
};

// Console or JSON, and the exporters asked for. Those that can fail on bad
// input (a port in use) come before any probe.
Result<Sinks> open_sinks(const Config& config, const PrometheusCliValues& prometheus_values,
                         const OtlpCliValues& otlp_values, const Messages& messages) {
  Sinks sinks;
  if (config.json) {
    sinks.add(std::make_unique<JsonSink>(stdout), false);
  } else {
    ConsoleOptions console{config.unit_name, config.timestamp, config.interval.count() > 0};
    console.slow_call_stacks = config.verbose;  // --slower-than lines with their stacks
    sinks.add(std::make_unique<ConsoleSink>(stdout, console), false);
  }
  auto prometheus = load_prometheus_sink(
      prometheus_values, [messages](std::string_view line) { messages.note(std::string(line)); });
  if (!prometheus) return std::unexpected(prometheus.error());
  if (*prometheus) {
    messages.detail(fmt::format("serving Prometheus metrics on {}", prometheus_values.listen));
    sinks.add(std::move(*prometheus), true);
  }
  if (otlp_values.enabled) {
    auto otlp =
        load_otlp_sink(otlp_values, config.pid.value_or(0),
                       [messages](std::string_view line) { messages.note(std::string(line)); });
    if (!otlp) return std::unexpected(otlp.error());
    sinks.add(std::move(*otlp), true);
  }
  return sinks;
}

// With --subtract-overhead: what the probes add to each duration.
// Following programs, too: the self-metrics count what the probes cost.
Result<std::optional<Calibration>> measure_overhead(const Config& config,
                                                    const Messages& messages) {
  if (!config.subtract_overhead && !config.following()) return std::optional<Calibration>();
  auto measured = calibrate();
  if (!measured) return std::unexpected(measured.error());
  messages.detail(format_calibration(*measured));
  return std::optional<Calibration>(*measured);
}

// Loads the BPF object and attaches every planned function; says where the
// probes went (-v) and which functions were left out.
Result<TracingProbes> attach(const Config& config, const LoadOptions& load,
                             const PlannedTargets& targets, const Messages& messages) {
  auto probes = load_and_attach(load, targets.sites, targets.plans, config.pid);
  if (!probes) return std::unexpected(probes.error());
  messages.detail(links_line(probes->links.link_count(), probes->method));
  messages.detail([&] {
    return fmt::format("kernel memory locked by the BPF maps: {} bytes ({} kernel slots)",
                       probes->object->locked_memory(), probes->object->kernel_slots());
  });
  for (const auto& site : probes->links.sites()) {
    messages.detail([&] { return attached_line(site); });
  }
  const auto& dropped = probes->links.dropped();
  if (!dropped.empty()) messages.note(dropped_line(dropped));
  for (const auto& function : dropped) messages.detail(function.symbol + ": " + function.reason);
  return probes;
}

Aggregator make_aggregator(const Config& config, const TracingProbes& probes,
                           const PlannedSpans& spans) {
  auto [groups, group_of_function] =
      report_groups(config, probes.links.sites(), probes.object->num_functions());
  add_span_groups(config, spans, probes.object->options(), groups, group_of_function);
  // A process in a container: its reports say which.
  if (config.pid) {
    if (auto cgroup = cgroup_of_process(*config.pid)) {
      ContainerInfo container = container_of_cgroup(*cgroup);
      for (auto& group : groups) {
        group.container_id = container.container_id;
        group.pod_uid = container.pod_uid;
      }
    }
  }
  Aggregator aggregator(std::move(groups), std::move(group_of_function), config.unit_ns,
                        std::chrono::system_clock::now(), config.cpu_split, config.self_time);
  if (config.series_by) aggregator.set_series(series_options(config));
  aggregator.set_slowest(config.slowest);
  return aggregator;
}

// A traced function's symbol and binary, by id (late ones included).
std::pair<std::string, std::string> function_name(const TracingProbes& probes, uint32_t fn_id) {
  for (const auto& site : probes.links.sites()) {
    if (site.fn_id == fn_id) return {site.symbol, site.binary};
  }
  return {fmt::format("function {}", fn_id), std::string()};
}

// --slowest/--slower-than: a slow call's copied stack, unwound and named.
// Its process is taken in as its record arrives (see_process), and the
// state of processes that exited goes once their records are resolved
// (checked at most once a second).
void name_slow_call_stacks(StackResolver& resolver, SessionOptions& options) {
  options.slow_call_arrived = [&resolver](const fl_slow_call& record) {
    const int pid = static_cast<int>(record.tgid);
    if (resolver.knows_process(pid)) return;
    RaisedCapabilities raised;  // its maps and files (drop_privileges)
    resolver.see_process(pid);
  };
  auto last_check = std::chrono::steady_clock::now();
  options.slow_calls_resolved = [&resolver, last_check]() mutable {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < std::chrono::seconds(1)) return;
    last_check = now;
    resolver.forget_exited([](int pid) { return kill(pid, 0) < 0 && errno == ESRCH; });
  };
  options.resolve_stack = [&resolver](const fl_slow_call& record) {
    StackSample sample{
        .pid = static_cast<int>(record.tgid),
        .tid = static_cast<int>(record.tid),
        .regs = {.ip = record.regs.ip,
                 .sp = record.regs.sp,
                 .bp = record.regs.bp,
                 .bx = record.regs.bx,
                 .r12 = record.regs.r12,
                 .r13 = record.regs.r13,
                 .r14 = record.regs.r14,
                 .r15 = record.regs.r15},
        .stack = {record.stack, std::min<size_t>(record.stack_bytes, sizeof(record.stack))},
        .at_ret = (record.flags & FL_SLOW_AT_RET) != 0};
    // Kept permitted after attach for this only (drop_privileges).
    RaisedCapabilities raised;
    return resolver.resolve(sample);
  };
}

// --follow/--config: the programs followed into containers, and how a
// reload of the file goes (the self-metrics say it too).
struct Following {
  std::unique_ptr<FunctionAttacher> attacher;
  std::unique_ptr<ProgramFollower> follower;
  std::vector<FollowTarget> targets;  // the last good configuration's
  std::vector<SpanSpec> spans;        // likewise
  std::optional<AgentSettings> settings;
  bool started = false;
  bool last_reload_ok = true;
  uint64_t reload_failures = 0;
};

// Followed spans: set in the object's room when first followed, planned
// and attached (in every process that runs the file) per file of the program.
SpanHooks span_hooks(const Config& config, ElfSymbolResolver& resolver, ProbePlanner& planner,
                     BpfObject& object) {
  if (!config.spans_followed) return {};
  return SpanHooks{.configure =
                       [&object](const SpanSpec& span, uint32_t index) {
                         return object.set_span(
                             index, span_settings(span, object.options().span_first_fn + index));
                       },
                   .attach = [&config, &resolver, &planner, &object](
                                 const SpanSpec& span, uint32_t index,
                                 const std::string& path) -> Result<SpanLinks> {
                     auto planned = plan_span_in_file(config, span, index, path, resolver, planner);
                     if (!planned) return std::unexpected(planned.error());
                     return attach_span_probes(object, std::span(&planned->first, 1),
                                               std::span(&planned->second, 1), -1);
                   },
                   .room = config.span_room};
}

Result<Following> start_following(const Config& config, const LoadOptions& load,
                                  const std::optional<Calibration>& calibration,
                                  ElfSymbolResolver& resolver, ProbePlanner& planner,
                                  TracingProbes& probes, Aggregator& aggregator,
                                  const Messages& messages) {
  Following following;
  if (!config.following()) return following;
  auto watch = ExecWatch::start(config.follow_hold);
  if (!watch) return std::unexpected(watch.error());
  if (messages.verbose) {
    const std::string grace =
        grace_period_line(read_whole_file("/sys/kernel/rcu_expedited").value_or(std::string()));
    if (!grace.empty()) messages.note(grace);
  }
  AttachSettings settings =
      attach_settings(config, load, probes.method,
                      config.subtract_overhead ? calibration : std::optional<Calibration>());
  settings.cost_ns = [calibration](const ProbePlan& plan) -> uint64_t {
    return calibration ? calibration->for_plan(plan) : 0;
  };
  following.attacher =
      std::make_unique<FunctionAttacher>(std::move(settings), 0, resolver, planner);
  following.follower = std::make_unique<ProgramFollower>(
      std::move(*watch), *following.attacher, *probes.object, aggregator,
      [messages](const std::string& line) { messages.note(line); },
      [messages](const std::string& line) { messages.detail(line); },
      TestDelay{config.test_follow_delay, config.test_follow_delay_inode},
      span_hooks(config, resolver, planner, *probes.object));
  following.targets = config.follow_targets;
  following.spans = config.spans;
  return following;
}

// The session's attach_late: the first call follows the targets into the
// processes running now, every later one the programs exec'd since.
std::function<Result<std::vector<uint32_t>>()> follow_programs(Following& following) {
  if (!following.follower) return {};
  return [&following]() -> Result<std::vector<uint32_t>> {
    RaisedCapabilities raised;  // kept permitted for this (drop_privileges)
    if (!following.started) {
      following.started = true;
      auto added = following.follower->follow(following.targets, following.spans);
      auto more = following.follower->poll();
      if (!more) return std::unexpected(more.error());
      added.insert(added.end(), more->begin(), more->end());
      return added;
    }
    return following.follower->poll();
  };
}

// The agent's status on every report: the follower's counts, the reloads,
// and the CPU time the probes cost (calls times each function's cost).
std::function<void(Report&)> agent_status(const Following& following) {
  if (!following.follower) return {};
  return [&following](Report& report) {
    const FollowStats stats = following.follower->stats();
    std::vector<std::pair<std::string, uint64_t>> attach_failures;
    for (size_t i = 0; i < stats.failures.size(); i++) {
      attach_failures.emplace_back(std::string(follow_failure_name(static_cast<FollowFailure>(i))),
                                   stats.failures[i]);
    }
    report.agent = AgentStatus{
        .config_last_reload_successful = following.last_reload_ok,
        .config_reload_failures = following.reload_failures,
        .functions_attached = stats.functions_attached,
        .files_attached = stats.files_attached,
        .processes_seen = stats.processes_seen,
        .exec_dropped = stats.exec_dropped,
        .attach_failures = std::move(attach_failures),
        .probe_cpu_seconds = static_cast<double>(report.probe_cpu_ns) / 1e9,
        .kernel_memory_bytes = stats.kernel_memory_bytes,
    };
  };
}

// SIGHUP with --config: the file again. One that does not load, or changes
// what only a restart can, is refused whole: the last good one keeps running.
std::function<std::vector<uint32_t>()> reload_config(const Config& config, Following& following,
                                                     const Messages& messages) {
  if (config.config_file.empty() || !following.follower) return {};
  return [&config, &following, messages]() -> std::vector<uint32_t> {
    auto refuse = [&](const std::string& why) {
      following.last_reload_ok = false;
      following.reload_failures++;
      messages.note("reload of " + config.config_file + " refused: " + why +
                    "; the last good configuration keeps running");
      return std::vector<uint32_t>();
    };
    auto loaded = load_agent_config(config.config_file);
    if (!loaded) return refuse(loaded.error().message());
    if (following.settings && loaded->settings != *following.settings) {
      return refuse("by, slowest, interval and exporters take a restart to change");
    }
    for (const auto& target : loaded->targets) {
      if ((series_by_bits(*target.by) & ~config.series_by) != 0) {
        return refuse("target " + target.name +
                      "'s by needs series the run did not start with; restart to add them");
      }
    }
    auto spans = spans_of(loaded->spans, true);
    if (!spans) return refuse(spans.error().message());
    if (following.follower->new_spans(*spans) > following.follower->span_room_left()) {
      if (!config.spans_followed)
        return refuse("the run started with no span; restart to add spans");
      return refuse(fmt::format("the run has room for {} more spans; restart to add more",
                                following.follower->span_room_left()));
    }
    RaisedCapabilities raised;
    following.started = true;
    following.targets = loaded->targets;
    following.spans = std::move(*spans);
    auto added = following.follower->follow(following.targets, following.spans);
    following.last_reload_ok = true;
    messages.note(fmt::format("reloaded {}: following {} target{} and {} span{}",
                              config.config_file, following.targets.size(),
                              following.targets.size() == 1 ? "" : "s", following.spans.size(),
                              following.spans.size() == 1 ? "" : "s"));
    return added;
  };
}

// -c/--cgroup: each directory, opened for the kernel's cgroup filter.
Result<std::vector<UniqueFd>> open_cgroups(const Config& config) {
  std::vector<UniqueFd> fds;
  for (const auto& path : config.cgroups) {
    auto fd = open_cgroup_v2(path);
    if (!fd) return std::unexpected(fd.error());
    fds.push_back(std::move(*fd));
  }
  return fds;
}

Result<UniqueFd> open_stop_signalfd() {
  const sigset_t signals = stop_signals();
  UniqueFd fd(signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) return runtime_error("create a signalfd", errno);
  return fd;
}

// A wrong deployment is one line before anything loads: the agent's
// capabilities, the cgroup tree.
Result<void> check_deployment(const Config& config) {
  if (config.following()) {
    if (auto held = check_agent_capabilities(); !held) return held;
  }
  return check_cgroup_tree(config);
}

// Attached: from here on only the descriptors held are needed, and what
// attaching later and naming stacks take, kept permitted.
Result<void> drop_after_attach(const std::optional<TargetUser>& user, const Config& config,
                               const LateAttacher& late, const TracingProbes& probes) {
  return drop_privileges(
      user,
      (late.waiting() ? late_attach_capabilities(probes.method == AttachMethod::kPerfEvent) : 0) |
          // Following: links and task iterators made as programs start.
          (config.following() ? late_attach_capabilities(true) : 0) |
          (probes.object->slow_calls() ? stack_unwinding_capabilities() : 0) |
          // Go code: whether a goroutine with a call in flight ended (its g's goid).
          (probes.object->options().go_programs ? process_memory_capabilities() : 0));
}

// How the session runs: the run's options, and the callbacks through which
// it attaches later (a library loaded, a program followed), reloads,
// annotates, names functions and slow calls' stacks.
SessionOptions run_session_options(const Config& config, const Messages& messages,
                                   const Sinks& sinks, LateAttacher& late, Following& following,
                                   const TracingProbes& probes, const Aggregator& aggregator,
                                   StackResolver& stacks) {
  SessionOptions options = session_options(config);
  if (config.verbose)
    options.verbose = [messages](const std::string& line) { messages.note(line); };
  options.live_sinks = sinks.live;
  options.attach_late = late.callback();
  if (following.follower) {
    options.attach_late = follow_programs(following);
    options.late_attach_fd = following.follower->wait_fd();
    options.late_attach_period = std::chrono::seconds(1);
    options.reload = reload_config(config, following, messages);
    options.annotate = agent_status(following);
  }
  options.describe_function = [&probes, &aggregator](uint32_t fn_id) {
    auto named = function_name(probes, fn_id);
    // A followed program's functions are known where they report.
    if (named.second.empty()) named = aggregator.name_of(fn_id).value_or(named);
    return named;
  };
  if (probes.object->slow_calls()) name_slow_call_stacks(stacks, options);
  if (probes.object->options().go_programs) {
    options.read_goid = [](uint32_t tgid, uint64_t address) {
      RaisedCapabilities raised;  // another process's memory (drop_privileges)
      return read_goid(tgid, address);
    };
  }
  return options;
}

// What is traced, on stderr as the session starts.
void print_banner(const Config& config, const TracingProbes& probes, const LateAttacher& late) {
  std::fputs(config.following()
                 ? follow_banner(config).c_str()
                 : start_banner(config, probes.links.sites(), late.pending()).c_str(),
             stderr);
}

// What the BPF object loads with: the targets', the spans' and the cgroups'
// settings (the cgroups' descriptors stay open for the whole run).
LoadOptions run_load_options(const Config& config, const PlannedTargets& targets,
                             const PlannedSpans& spans,
                             const std::optional<Calibration>& calibration,
                             const std::vector<UniqueFd>& cgroups) {
  LoadOptions load = load_options(config, targets, calibration);
  add_span_load_options(config, spans, load);
  // Followed spans: room set aside, each index set as its span is followed.
  if (config.spans_followed && config.span_room > 0) {
    load.span_first_fn = load.num_functions;
    load.span_capacity = config.span_capacity;
    for (uint32_t index = 0; index < config.span_room; index++) {
      load.spans.push_back(fl_span_config{.fn_id = load.span_first_fn + index});
    }
    load.num_functions += config.span_room;
  }
  for (const auto& fd : cgroups) load.cgroup_fds.push_back(fd.get());
  return load;
}

// The spans' start and end probes, on the object the functions' probes load.
Result<SpanLinks> attach_spans(const Config& config, const PlannedSpans& spans,
                               const TracingProbes& probes, const Messages& messages) {
  auto links =
      attach_span_probes(*probes.object, spans.starts, spans.ends, config.pid.value_or(-1));
  if (!links || spans.specs.empty()) return links;
  messages.detail([&] {
    return fmt::format("{} spans: {} probes; the open-span map holds {} (--span-capacity)",
                       spans.specs.size(), links->starts.size() + links->ends.size(),
                       config.span_capacity);
  });
  return links;
}

Result<void> run(const Config& config, const std::optional<AgentSettings>& agent_settings,
                 const PrometheusCliValues& prometheus_values, const OtlpCliValues& otlp_values,
                 const PrivilegeCliValues& privilege_values, UprobeWarmup& warmup) {
  const Messages messages{config.verbose};
  auto user = lookup_user(privilege_values);
  if (!user) return std::unexpected(user.error());
  if (auto deployed = check_deployment(config); !deployed) return deployed;
  // Kept to the end of the run: a library loaded later is resolved and
  // planned by the same objects, and tearing a big symbol table down would
  // only delay the start.
  ElfSymbolResolver resolver;
  ProbePlanner planner;
  auto targets = plan_targets(config, resolver, planner, messages);
  if (!targets) return std::unexpected(targets.error());
  // Followed spans are planned as their program runs (agent/program_follower).
  auto spans = config.spans_followed ? Result<PlannedSpans>(PlannedSpans{})
                                     : plan_spans(config, resolver, planner);
  if (!spans) return std::unexpected(spans.error());
  auto sinks = open_sinks(config, prometheus_values, otlp_values, messages);
  if (!sinks) return std::unexpected(sinks.error());
  auto calibration = measure_overhead(config, messages);
  if (!calibration) return std::unexpected(calibration.error());
  auto cgroups = open_cgroups(config);
  if (!cgroups) return std::unexpected(cgroups.error());
  const LoadOptions load = run_load_options(config, *targets, *spans, *calibration, *cgroups);
  auto probes = attach(config, load, *targets, messages);
  if (!probes) return std::unexpected(probes.error());
  auto span_links = attach_spans(config, *spans, *probes, messages);
  if (!span_links) return std::unexpected(span_links.error());
  warmup.wait_registered();
  Aggregator aggregator = make_aggregator(config, *probes, *spans);
  LateAttacher late(config, targets->waiting,
                    watch_options(config, load, probes->method,
                                  static_cast<uint32_t>(targets->sites.size()), *calibration),
                    site_keys(targets->sites), resolver, planner, *probes, aggregator, messages);
  auto following =
      start_following(config, load, *calibration, resolver, planner, *probes, aggregator, messages);
  if (!following) return std::unexpected(following.error());
  following->settings = agent_settings;
  auto stop_fd = open_stop_signalfd();
  if (!stop_fd) return std::unexpected(stop_fd.error());
  if (auto dropped = drop_after_attach(*user, config, late, *probes); !dropped) {
    return std::unexpected(dropped.error());
  }
  warmup.release();
  // Bound before attach; no network byte is read before the drop (Sink::start).
  if (auto serving = sinks->every->start(); !serving) return std::unexpected(serving.error());

  StackResolver stacks;
  TraceSession session(
      *probes->object, aggregator, sinks->all(),
      run_session_options(config, messages, *sinks, late, *following, *probes, aggregator, stacks),
      stop_fd->get(), [&probes, &span_links] {
        span_links->detach_all();
        probes->detach();
      });
  print_banner(config, *probes, late);
  auto stopped = session.run();
  if (late.waiting()) messages.note(never_loaded_line(config.pid.value_or(0), late.pending()));
  if (!stopped) return std::unexpected(stopped.error());
  return {};
}

}  // namespace
}  // namespace funclatency

namespace funclatency {

// Whether the command line asks to trace (and so to attach): not for help,
// the version, a list, a calibration or a configuration check, which attach
// nothing and would only pay the warm-up link's close on their way out. The
// parser decides for real; this only lets the warm-up start before it.
bool looks_like_tracing(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const std::string_view arg(argv[i]);
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help" || arg == "--version" || arg == "-l" || arg == "--list" ||
        arg == "--calibrate" || arg == "--check-config") {
      return false;
    }
  }
  return argc > 1;
}

}  // namespace funclatency

int main(int argc, char** argv) {
  using namespace funclatency;
  // Block the stop signals before any thread exists, so every thread
  // inherits the mask and only the session's signalfd sees them.
  const sigset_t signals = stop_signals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  // A closed stdout shows up as a failed write, which stops the run cleanly.
  signal(SIGPIPE, SIG_IGN);

  if (argc >= 2 && (std::string_view(argv[1]) == "report" || std::string_view(argv[1]) == "diff")) {
    return run_offline(argc, argv);
  }
  // --calibrate alone needs no TARGET, which the parser otherwise requires.
  if (argc == 2 && std::string_view(argv[1]) == "--calibrate") {
    route_libbpf_messages(false);
    return exit_code(run_calibration());
  }

  std::optional<UprobeWarmup> warmup;
  if (looks_like_tracing(argc, argv)) warmup.emplace();
  auto arguments = parse_command_line(argc, argv);
  if (!arguments) return arguments.error();
  CommandLine& values = arguments->core;
  PrometheusCliValues& prometheus_values = arguments->prometheus;
  OtlpCliValues& otlp_values = arguments->otlp;
  const PrivilegeCliValues& privilege_values = arguments->privileges;
  std::optional<AgentConfig> agent;
  if (!values.config_file.empty()) {
    auto loaded = load_agent_config(values.config_file);
    if (!loaded) return exit_code(std::unexpected(loaded.error()));
    apply_agent_settings(*loaded, values);
    apply_exporter_settings(loaded->settings, prometheus_values, otlp_values);
    agent = std::move(*loaded);
  }
  auto config = finish_config(values);
  if (!config) return exit_code(std::unexpected(config.error()));
  if (agent) {
    config->follow_targets = agent->targets;
    auto spans = spans_of(agent->spans, true);
    if (!spans) {
      Error error = spans.error();
      error.context = values.config_file + ": " + error.context;
      return exit_code(std::unexpected(std::move(error)));
    }
    // Room for reloads' spans when the file starts with spans; a file with
    // none runs without the open-span map (its kernel memory follows the work).
    config->spans = std::move(*spans);
    config->spans_followed = !config->spans.empty();
    if (config->spans_followed) {
      config->span_room = std::max<uint32_t>(kAgentSpanRoom, config->spans.size());
    }
    // The probes key series by every target's --by; each keeps its own.
    for (const auto& target : agent->targets) config->series_by |= series_by_bits(*target.by);
  }
  if (config->check_config) {
    std::fputs(follow_banner(*config).c_str(), stdout);
    return 0;
  }
  route_libbpf_messages(config->verbose);
  // Neither lists nor calibration needs a sink: no exporter module loads.
  if (config->list) return exit_code(list_targets(*config));
  if (config->calibrate) return exit_code(run_calibration());
  [[maybe_unused]] auto open_files = raise_open_file_limit();  // best effort: a low soft limit
  std::optional<AgentSettings> agent_settings;
  if (agent) agent_settings = agent->settings;
  // The kernel's first-uprobe wait (probe/uprobe_warmup.h), begun before the
  // command line is parsed when it looks like a tracing run, so that it runs
  // while the targets are planned and the BPF object loads.
  if (!warmup) warmup.emplace();
  return exit_code(
      run(*config, agent_settings, prometheus_values, otlp_values, privilege_values, *warmup));
}
