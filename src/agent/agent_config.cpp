// Why: see agent_config.h. Decoded with yaml-cpp through common/yaml_fields.h,
// the way --web-config is.
#include "agent/agent_config.h"

#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include "common/duration.h"
#include "common/read_file.h"
#include "common/yaml_fields.h"

namespace funclatency {
namespace {

using yaml::absent;
using yaml::check_fields;
using yaml::fail;
using yaml::scalar;

std::chrono::milliseconds duration(const YAML::Node& node, std::string_view field) {
  const std::string text = scalar(node, field);
  auto ns = parse_duration_ns(text);
  if (!ns || *ns < 1'000'000)
    fail(node, std::string(field) + " must be a duration of 1ms or more, e.g. 10s");
  return std::chrono::milliseconds(*ns / 1'000'000);
}

std::vector<std::string> functions(const YAML::Node& node) {
  if (node.IsScalar()) return {node.Scalar()};
  auto list = yaml::strings(node, "functions");
  for (const auto& name : list) {
    if (name.empty()) fail(node, "functions: an empty name");
  }
  return list;
}

std::optional<ModeChoice> mode(const YAML::Node& node) {
  if (absent(node)) return std::nullopt;
  const std::string text = scalar(node, "mode");
  if (text == "auto") return ModeChoice::kAuto;
  if (text == "events") return ModeChoice::kEvents;
  if (text == "kernel") return ModeChoice::kKernel;
  fail(node, "mode must be auto, events or kernel, not \"" + text + "\"");
}

std::vector<std::pair<std::string, std::string>> labels(const YAML::Node& node) {
  std::vector<std::pair<std::string, std::string>> result;
  if (absent(node)) return result;
  if (!node.IsMap()) fail(node, "labels must be a mapping of names to values");
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!valid) fail(entry.first, "label name \"" + name + "\" must be [a-zA-Z_][a-zA-Z0-9_]*");
    if (name.starts_with("__")) fail(entry.first, "label names starting with __ are reserved");
    result.emplace_back(name, scalar(entry.second, "labels." + name));
  }
  return result;
}

std::vector<std::string> by_keys(const YAML::Node& node) {
  auto keys = yaml::strings(node, "by");
  for (const auto& key : keys) {
    if (key != "pid" && key != "comm" && key != "cgroup") {
      fail(node, "by: \"" + key +
                     "\" is not pid, comm or cgroup (retval and argN series are for the command "
                     "line; a --config file's targets cannot have them yet)");
    }
  }
  return keys;
}

// A whole number from 1 to `most`, for `field`.
uint64_t count_field(const YAML::Node& node, const std::string& field, uint64_t most) {
  uint64_t n = 0;
  try {
    n = node.as<uint64_t>();
  } catch (const YAML::Exception&) {
    fail(node, field + " must be a whole number");
  }
  if (n < 1 || n > most) fail(node, fmt::format("{} must be 1 to {}", field, most));
  return n;
}

// --slowest K: 1 to kMaxSlowest.
size_t slowest(const YAML::Node& node) {
  return count_field(node, "slowest", kMaxSlowest);
}

// --go-goroutines N: 1 to kMaxGoGoroutines.
uint32_t go_goroutines(const YAML::Node& node) {
  return static_cast<uint32_t>(count_field(node, "go_goroutines", kMaxGoGoroutines));
}

FollowTarget target(const YAML::Node& node) {
  check_fields(
      node, "a target",
      {"name", "program", "functions", "regex", "mode", "labels", "by", "slowest", "slower_than"});
  FollowTarget t;
  t.name = scalar(node["name"], "name");
  if (t.name.empty()) fail(node, "a target needs a name");
  t.program = scalar(node["program"], "program");
  if (t.program.empty())
    fail(node, "target " + t.name + " needs a program (its path inside the container)");
  if (t.program.find('/') != std::string::npos && !t.program.starts_with('/')) {
    fail(node["program"],
         "target " + t.name +
             ": program must be an absolute path (as the container sees it) or a file name");
  }
  if (absent(node["functions"])) fail(node, "target " + t.name + " needs functions");
  t.functions = functions(node["functions"]);
  if (t.functions.empty()) fail(node["functions"], "target " + t.name + " names no function");
  if (!absent(node["regex"])) t.regex = yaml::boolean(node["regex"], "regex");
  t.mode = mode(node["mode"]);
  if (!absent(node["by"])) t.by = by_keys(node["by"]);
  if (!absent(node["slowest"])) t.slowest = slowest(node["slowest"]);
  if (!absent(node["slower_than"])) {
    const std::string text = scalar(node["slower_than"], "slower_than");
    auto ns = parse_duration_ns(text);
    if (!ns || *ns == 0) fail(node["slower_than"], "slower_than must be a duration, e.g. 10ms");
    t.slower_than_ns = *ns;
  }
  t.labels = labels(node["labels"]);
  for (const auto& [name, value] : t.labels) {
    if (name == "target") fail(node["labels"], "the label \"target\" is the target's name");
  }
  return t;
}

// A `spans` item: --span's text, or a mapping of its parts, written as that text.
std::string span_text(const YAML::Node& node) {
  if (node.IsScalar()) {
    if (node.Scalar().empty()) fail(node, "spans: an empty span");
    return node.Scalar();
  }
  if (!node.IsMap()) fail(node, "a span is --span's text or a mapping (name, start, end)");
  check_fields(node, "a span", {"name", "start", "end", "any_process"});
  const std::string name = scalar(node["name"], "name");
  const std::string start = scalar(node["start"], "start");
  const std::string end = scalar(node["end"], "end");
  if (name.empty() || start.empty() || end.empty()) fail(node, "a span needs name, start and end");
  const bool any =
      !absent(node["any_process"]) && yaml::boolean(node["any_process"], "any_process");
  return name + "=" + start + " -> " + end + (any ? " any-process" : "");
}

AgentSettings settings(const YAML::Node& root) {
  AgentSettings s;
  s.by = by_keys(root["by"]);
  if (!absent(root["slowest"])) s.slowest = slowest(root["slowest"]);
  if (!absent(root["interval"])) s.interval = duration(root["interval"], "interval");
  if (!absent(root["series_expiry"])) {
    s.series_expiry = duration(root["series_expiry"], "series_expiry");
  }
  if (!absent(root["go_goroutines"])) s.go_goroutines = go_goroutines(root["go_goroutines"]);
  const YAML::Node exporters = root["exporters"];
  if (absent(exporters)) return s;
  check_fields(exporters, "exporters", {"prometheus", "otlp"});
  if (const YAML::Node p = exporters["prometheus"]; !absent(p)) {
    check_fields(p, "exporters.prometheus", {"listen", "web_config"});
    s.prometheus = PrometheusExporterConfig{scalar(p["listen"], "listen"),
                                            scalar(p["web_config"], "web_config")};
    if (s.prometheus->listen.empty()) fail(p, "exporters.prometheus needs listen (host:port)");
  }
  if (const YAML::Node o = exporters["otlp"]; !absent(o)) {
    check_fields(o, "exporters.otlp", {"endpoint", "protocol"});
    s.otlp =
        OtlpExporterConfig{scalar(o["endpoint"], "endpoint"), scalar(o["protocol"], "protocol")};
    if (s.otlp->endpoint.empty()) fail(o, "exporters.otlp needs an endpoint");
  }
  return s;
}

AgentConfig decode(const YAML::Node& root) {
  if (absent(root)) throw yaml::Invalid{"the file is empty"};
  check_fields(root, "the configuration",
               {"targets", "spans", "by", "slowest", "interval", "series_expiry", "go_goroutines",
                "exporters"});
  AgentConfig config;
  const YAML::Node spans = root["spans"];
  if (!absent(spans)) {
    if (!spans.IsSequence()) fail(spans, "spans must be a list");
    for (const auto& node : spans) config.spans.push_back(span_text(node));
  }
  const YAML::Node targets = root["targets"];
  const bool no_targets = absent(targets) || (targets.IsSequence() && targets.size() == 0);
  if ((no_targets && config.spans.empty()) || (!no_targets && !targets.IsSequence())) {
    fail(root, "targets: at least one target (or span) is needed");
  }
  std::set<std::string> names, programs;
  for (const auto& node : no_targets ? YAML::Node(YAML::NodeType::Sequence) : targets) {
    config.targets.push_back(target(node));
    if (!names.insert(config.targets.back().name).second) {
      fail(node, "two targets are named " + config.targets.back().name);
    }
    // Two targets on one program would probe its functions twice.
    if (!programs.insert(config.targets.back().program).second) {
      fail(node, "two targets follow " + config.targets.back().program +
                     ": list all of its functions in one target");
    }
  }
  config.settings = settings(root);
  // A target without a `by` of its own has the file's (cgroup by default:
  // a followed program runs in many containers).
  for (auto& target : config.targets) {
    if (!target.by) {
      target.by =
          config.settings.by.empty() ? std::vector<std::string>{"cgroup"} : config.settings.by;
    }
  }
  return config;
}

}  // namespace

Result<AgentConfig> parse_agent_config(std::string_view text, const std::string& source) {
  try {
    return decode(YAML::Load(std::string(text)));
  } catch (const yaml::Invalid& invalid) {
    return bad_input(source + ": " + invalid.message, "see `funclatency --help` (--config)");
  } catch (const YAML::Exception& e) {
    return bad_input(fmt::format("{}: not YAML: {}", source, e.what()));
  }
}

Result<AgentConfig> load_agent_config(const std::string& path) {
  auto text = read_whole_file(path);
  if (!text) {
    return bad_input("cannot read " + path + " (--config)", "check the path", text.error());
  }
  return parse_agent_config(*text, path);
}

}  // namespace funclatency
