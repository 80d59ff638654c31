#include "cli/late_attacher.h"

#include "cli/privileges.h"
#include "cli/run_stages.h"

namespace funclatency {

LateAttacher::LateAttacher(const Config& config, std::vector<TargetSpec> waiting,
                           WatchOptions options,
                           std::set<std::pair<std::string, uint64_t>> already_traced,
                           ElfSymbolResolver& resolver, ProbePlanner& planner,
                           TracingProbes& probes, Aggregator& aggregator, Messages messages)
    : config_(config),
      watch_(std::move(waiting), std::move(options), std::move(already_traced), resolver, planner),
      probes_(probes),
      aggregator_(aggregator),
      messages_(messages) {}

Result<std::vector<uint32_t>> LateAttacher::poll() {
  // The capabilities kept for this (privileges.h) are effective only now.
  RaisedCapabilities raised;
  auto polled = watch_.poll(*probes_.object, probes_.links);
  if (!polled) return std::unexpected(polled.error());
  for (const auto& note : polled->notes) messages_.note(note);
  std::vector<uint32_t> added;
  for (const auto& site : polled->attached) {
    aggregator_.add_function(site.fn_id, {site.symbol, site.binary, config_.pid.value_or(0)},
                             config_.merge);
    messages_.detail(attached_line(site));
    added.push_back(site.fn_id);
  }
  return added;
}

std::function<Result<std::vector<uint32_t>>()> LateAttacher::callback() {
  if (!waiting()) return {};
  return [this] { return poll(); };
}

}  // namespace funclatency
