// The agent's configuration (--config FILE, YAML): which programs to follow
// into every container of the node and which of their functions to time,
// with the settings of the run and its exporters. Read once at the start
// and again on SIGHUP; a file that does not parse or names nothing is
// refused whole, so the last good configuration keeps running.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collect/tracing_choices.h"
#include "common/error.h"

namespace funclatency {

// A program followed wherever it runs: every process on the host whose
// executable is `program` as the process itself sees it (inside its
// container), running now or started later.
struct FollowTarget {
  std::string name;     // unique; the `target` label (empty from the command line)
  std::string program;  // an absolute path inside the container, or an executable's file name
  std::vector<std::string> functions;  // names or glob patterns (regular expressions with regex)
  bool regex = false;
  std::optional<ModeChoice> mode;  // unset: the run's
  // The target's own series: pid | comm | cgroup (empty: none). From a
  // --config file always set (the file's `by` when the target says none);
  // unset from --follow: the run's --by.
  std::optional<std::vector<std::string>> by;
  std::vector<std::pair<std::string, std::string>> labels;  // extra labels, in file order
  // The target's own slow calls (--slowest K, --slower-than); both unset:
  // the run's.
  std::optional<size_t> slowest;
  std::optional<uint64_t> slower_than_ns;
  bool operator==(const FollowTarget&) const = default;
};

struct PrometheusExporterConfig {
  std::string listen;      // host:port
  std::string web_config;  // empty: plain HTTP, no auth
  bool operator==(const PrometheusExporterConfig&) const = default;
};

struct OtlpExporterConfig {
  std::string endpoint;
  std::string protocol;  // empty: the exporter's default
  bool operator==(const OtlpExporterConfig&) const = default;
};

// Everything but the targets takes effect at the start only; a reload that
// changes it is refused with a message saying so.
struct AgentSettings {
  std::vector<std::string> by;  // pid | comm | cgroup
  size_t slowest = 0;
  std::optional<std::chrono::milliseconds> interval;
  std::optional<std::chrono::milliseconds> series_expiry;  // --series-expiry
  uint32_t go_goroutines = 0;                              // --go-goroutines; 0: unset
  std::optional<PrometheusExporterConfig> prometheus;
  std::optional<OtlpExporterConfig> otlp;
  bool operator==(const AgentSettings&) const = default;
};

struct AgentConfig {
  std::vector<FollowTarget> targets;
  // `spans`: each as --span's value ("NAME=START -> END [any-process]"),
  // parsed by the caller (cli/span_option); a mapping item is written so.
  std::vector<std::string> spans;
  AgentSettings settings;
};

// The file's text, checked: every field known and typed, at least one
// target, names unique, each target with a program and functions. Errors are
// kBadInput naming `source` and the line.
Result<AgentConfig> parse_agent_config(std::string_view text, const std::string& source);
// The same, reading `path`.
Result<AgentConfig> load_agent_config(const std::string& path);

}  // namespace funclatency
