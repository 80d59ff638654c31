// A report's names made valid once, then the report handed to every sink.
#include "output/sink_fanout.h"

#include <algorithm>

#include "common/utf8.h"

namespace funclatency {
namespace {

// Calls `visit` on every name of a report (or a slow call), const or not.
template <typename Call, typename Visit>
void for_each_name(Call& call, Visit&& visit) {
  visit(call.thread);
  for (auto& frame : call.stack) {
    visit(frame.symbol);
    visit(frame.binary);
  }
}

template <typename Function, typename Visit>
void for_each_function_name(Function& function, Visit&& visit) {
  visit(function.symbol);
  visit(function.binary);
  for (auto* label : {&function.series.comm, &function.series.cgroup, &function.series.container_id,
                      &function.series.pod_uid, &function.series.runtime}) {
    if (*label) visit(**label);
  }
  // --config labels: a YAML file may spell any byte ("\xff").
  for (auto& label : function.labels) visit(label.second);
  for (auto* calls : {&function.interval_slowest, &function.total_slowest}) {
    for (auto& call : *calls) for_each_name(call, visit);
  }
}

template <typename Named, typename Visit>
void for_each_report_name(Named& named, Visit&& visit) {
  if constexpr (requires { named.functions; }) {
    for (auto& function : named.functions) for_each_function_name(function, visit);
  } else {
    visit(named.symbol);
    visit(named.binary);
    for_each_name(named.call, visit);
  }
}

template <typename Named>
bool names_valid(const Named& named) {
  bool valid = true;
  for_each_report_name(named,
                       [&](const std::string& name) { valid = valid && is_valid_utf8(name); });
  return valid;
}

template <typename Named>
void make_valid(Named& named) {
  for_each_report_name(named, [](std::string& name) { make_valid_utf8(name); });
}

// `use` gets `named` itself, or, when a name needs mending (rare), a mended copy.
template <typename Named, typename Use>
void with_valid_names(const Named& named, Use&& use) {
  if (names_valid(named)) {
    use(named);
    return;
  }
  Named valid = named;
  make_valid(valid);
  use(valid);
}

}  // namespace

bool make_names_valid(Report& report) {
  if (names_valid(report)) return false;
  make_valid(report);
  return true;
}

bool make_names_valid(SlowCallReport& slow) {
  if (names_valid(slow)) return false;
  make_valid(slow);
  return true;
}

Result<void> SinkFanout::start() {
  for (Sink* sink : sinks_) {
    if (auto started = sink->start(); !started) return started;
  }
  return {};
}

void SinkFanout::write(const Report& report) {
  with_valid_names(report, [this](const Report& shown) {
    for (Sink* sink : sinks_) sink->write(shown);
  });
}

void SinkFanout::write_slow_call(const SlowCallReport& slow) {
  with_valid_names(slow, [this](const SlowCallReport& shown) {
    for (Sink* sink : sinks_) sink->write_slow_call(shown);
  });
}

void SinkFanout::close() {
  for (Sink* sink : sinks_) sink->close();
}

bool SinkFanout::broken() const {
  return std::any_of(sinks_.begin(), sinks_.end(), [](Sink* sink) { return sink->broken(); });
}

}  // namespace funclatency
