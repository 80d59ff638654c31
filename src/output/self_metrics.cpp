// The agent's self-metrics from a Report (see self_metrics.h): the one place
// their kinds and help texts are written (their names: metric_names.h).
#include "output/self_metrics.h"

#include <algorithm>

namespace funclatency {
namespace {

namespace names = metric_names;

double count(uint64_t value) {
  return static_cast<double>(value);
}

SelfMetric unlabelled(SelfMetricId id, std::string_view name, SelfMetricKind kind,
                      std::string_view help, std::string_view otlp_unit, double value) {
  return {.id = id,
          .name = name,
          .kind = kind,
          .help = help,
          .otlp_unit = otlp_unit,
          .samples = {{.value = value}}};
}

// The agent's own state: its configuration, what it attached, what it saw start.
void add_agent_state_metrics(const AgentStatus& agent, std::vector<SelfMetric>& metrics) {
  using enum SelfMetricKind;
  using enum SelfMetricId;

  metrics.push_back(unlabelled(
      kConfigLastReloadSuccessful, names::kConfigLastReloadSuccessful, kGauge,
      "1 if the last load of the configuration (at start or on SIGHUP) succeeded, 0 if it "
      "failed and the previous one still runs.",
      "", agent.config_last_reload_successful ? 1 : 0));
  metrics.push_back(unlabelled(kConfigReloadFailures, names::kConfigReloadFailures, kCounter,
                               "Reloads of the configuration (SIGHUP) refused since the start.",
                               "{reload}", count(agent.config_reload_failures)));
  metrics.push_back(unlabelled(kAttachedFunctions, names::kAttachedFunctions, kGauge,
                               "Functions with probes attached now, over every target and file.",
                               "{function}", count(agent.functions_attached)));
  metrics.push_back(unlabelled(kAttachedFiles, names::kAttachedFiles, kGauge,
                               "Distinct program files (device, inode) with probes attached now: "
                               "one per image version of a program.",
                               "{file}", count(agent.files_attached)));

  SelfMetric failures{.id = kAttachFailures,
                      .name = names::kAttachFailures,
                      .kind = kCounter,
                      .help =
                          "Processes running a followed program left untraced, by reason: "
                          "no_function, no_room, kernel_refused.",
                      .otlp_unit = "{process}",
                      .label = names::kReason};
  for (const auto& [reason, value] : agent.attach_failures) {
    failures.samples.push_back({reason, count(value)});
  }
  metrics.push_back(std::move(failures));

  metrics.push_back(unlabelled(kExecEvents, names::kExecEvents, kCounter,
                               "Processes seen starting (exec) since the start.", "{process}",
                               count(agent.processes_seen)));
  metrics.push_back(unlabelled(kExecDropped, names::kExecDropped, kCounter,
                               "Execs the kernel's exec ring had no room for: a program first "
                               "started then is attached at its next start.",
                               "{process}", count(agent.exec_dropped)));
}

// What became of the traced calls and series, all functions together.
void add_call_metrics(const Report& report, std::vector<SelfMetric>& metrics) {
  const AgentStatus& agent = *report.agent;
  using enum SelfMetricKind;
  using enum SelfMetricId;

  LostCounts lost;
  for (const FunctionReport& function : report.functions) lost += function.total_lost;
  metrics.push_back({.id = kAllLostCalls,
                     .name = names::kAgentLostCalls,
                     .kind = kCounter,
                     .help = "Calls to traced functions that could not be timed, all functions, "
                             "by reason: unreturned (exception, longjmp or the return probe "
                             "limit), depth (nested deeper than the shadow stack), ringbuf (the "
                             "ring buffer was full).",
                     .otlp_unit = "{call}",
                     .label = names::kReason,
                     .samples = {{"unreturned", count(lost.unreturned)},
                                 {"depth", count(lost.depth)},
                                 {"ringbuf", count(lost.ringbuf)}}});
  metrics.push_back(unlabelled(kRingbufDropped, names::kAgentRingbufDropped, kCounter,
                               "Completed calls dropped because the ring buffer was full (the "
                               "agent read too slowly), all functions.",
                               "{call}", count(report.ringbuf_dropped_total)));
  metrics.push_back(unlabelled(kSeriesFolded, names::kSeriesFolded, kCounter,
                               "Series (processes, cgroups) whose calls were folded into "
                               "series=\"other\" because their function had more series than "
                               "allowed (--max-series).",
                               "{series}", count(report.series_folded)));
  metrics.push_back(unlabelled(kSeriesExpired, names::kSeriesExpired, kCounter,
                               "Series (processes, cgroups, values) that ended: their processes "
                               "gone and no call for --series-expiry, reported once more and "
                               "dropped, their room free for new series.",
                               "{series}", count(report.series_expired)));

  SelfMetric cpu = unlabelled(kProbeCpuSeconds, names::kProbeCpuSeconds, kCounter,
                              "CPU time the probes cost the traced programs: calls (timed and "
                              "lost) times the calibrated cost of one call.",
                              "s", agent.probe_cpu_seconds);
  cpu.openmetrics_unit = "seconds";
  cpu.integral = false;
  metrics.push_back(std::move(cpu));

  SelfMetric memory = unlabelled(kKernelMemory, names::kKernelMemory, kGauge,
                                 "Kernel memory the agent's BPF maps lock now (the tracing "
                                 "object's and the exec watch's), charged to its memory cgroup.",
                                 "By", count(agent.kernel_memory_bytes));
  memory.openmetrics_unit = "bytes";
  metrics.push_back(std::move(memory));
}

}  // namespace

std::vector<SelfMetric> self_metrics(const Report& report) {
  std::vector<SelfMetric> metrics;
  if (!report.agent) return metrics;
  add_agent_state_metrics(*report.agent, metrics);
  add_call_metrics(report, metrics);
  return metrics;
}

LabelList exported_labels(const LabelList& labels, std::span<const std::string_view> own) {
  LabelList exported;
  exported.reserve(labels.size());
  auto taken = [&](const std::string& name) {
    return std::ranges::find(own, name) != own.end() ||
           std::ranges::any_of(labels, [&](const auto& label) { return label.first == name; }) ||
           std::ranges::any_of(exported, [&](const auto& label) { return label.first == name; });
  };
  for (const auto& [name, value] : labels) {
    std::string renamed = name;
    if (std::ranges::find(own, name) != own.end()) {
      do {
        renamed = "exported_" + renamed;
      } while (taken(renamed));
    }
    exported.emplace_back(std::move(renamed), value);
  }
  return exported;
}

}  // namespace funclatency
