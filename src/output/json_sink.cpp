// The JSON lines sink: each record a pure function of a report (see
// json_sink.h for the fields), printed one object per line.
#include "output/json_sink.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <utility>

#include "common/names_table.h"
#include "model/json_record.h"
#include "output/json_convert.h"
#include "output/wall_time.h"

namespace funclatency {
namespace {

namespace field = json_record;

constexpr NamedValue<AggregationMode> kModeNames[] = {{AggregationMode::kEvents, "events"},
                                                      {AggregationMode::kKernel, "kernel"},
                                                      {AggregationMode::kMixed, "mixed"}};
static_assert(names_every_value(kModeNames, AggregationMode::kMixed));

// A histogram's fields; the wall histogram's sit in the record itself, each
// --cpu-split part's and the --self histogram in an object of its own.
nlohmann::json histogram_to_json(const LatencyHistogram& h) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : h.log2_rows()) {
    if (row.count == 0) continue;
    // high_ns is the last nanosecond that still falls in the row.
    rows.push_back({row.low_unit * h.unit_ns(), (row.high_unit + 1) * h.unit_ns() - 1, row.count});
  }
  return {
      {field::kCount, h.count()},
      {field::kSumNs, h.sum_ns()},
      {field::kMinNs, h.min_ns()},
      {field::kMaxNs, h.max_ns()},
      {field::kP50Ns, h.percentile_ns(0.50)},
      {field::kP95Ns, h.percentile_ns(0.95)},
      {field::kP99Ns, h.percentile_ns(0.99)},
      {field::kLog2Buckets, rows},
  };
}

// One record's text. Names arrive valid UTF-8 (output/sink_fanout.h); a byte
// that is not is replaced rather than thrown over, so no record is lost.
std::string record_text(const nlohmann::json& record) {
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
}

uint64_t unix_nanos(std::chrono::system_clock::time_point time) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

nlohmann::json frame_to_json(const StackFrame& frame) {
  nlohmann::json object = {{field::kAddress, fmt::format("0x{:x}", frame.address)}};
  if (!frame.symbol.empty()) {
    object[field::kSymbol] = frame.symbol;
    object[field::kOffset] = frame.offset;
  }
  if (!frame.binary.empty()) object[field::kBinary] = frame.binary;
  return object;
}

}  // namespace

nlohmann::json slow_call_to_json(const SlowCall& call) {
  nlohmann::json object = {
      {field::kDurationNs, call.duration_ns},
      {field::kPid, call.pid},
      {field::kTid, call.tid},
      {field::kThread, call.thread},
      {field::kTimeUnixNano, unix_nanos(call.time)},
  };
  if (call.runnable_ns) object[field::kRunnableNs] = *call.runnable_ns;
  if (call.blocked_ns) object[field::kBlockedNs] = *call.blocked_ns;
  if (!call.stack.empty()) {
    nlohmann::json stack = nlohmann::json::array();
    for (const StackFrame& frame : call.stack) stack.push_back(frame_to_json(frame));
    object[field::kStack] = std::move(stack);
  }
  return object;
}

nlohmann::json slow_call_report_to_json(const SlowCallReport& slow) {
  // Named as in the records (symbol, binary, time), then the exemplar's fields.
  nlohmann::json object = {
      {field::kType, field::kSlowCall},
      {field::kTime, format_rfc3339(slow.call.time)},
      {field::kSymbol, slow.symbol},
      {field::kBinary, slow.binary},
      {field::kThresholdNs, slow.threshold_ns},
  };
  object.update(slow_call_to_json(slow.call));
  return object;
}

std::string format_rfc3339(std::chrono::system_clock::time_point time) {
  const auto [seconds, micros] = split_micros(time);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", fmt::gmtime(seconds), micros);
}

nlohmann::json function_to_json(const Report& report, const FunctionReport& function) {
  bool total = report.kind == Report::Kind::kTotal;
  const LatencyHistogram& h = total ? function.total : function.interval;
  const LostCounts& lost = total ? function.total_lost : function.interval_lost;
  nlohmann::json record = {
      {field::kType, total ? field::kTotal : field::kInterval},
      {field::kTime, format_rfc3339(report.time)},
      {field::kSymbol, function.symbol},
      {field::kBinary, function.binary},
      {field::kMode, name_in(kModeNames, function.mode)},
      {field::kLost, lost.total()},
      {field::kLostUnreturned, lost.unreturned},
      {field::kLostDepth, lost.depth},
      {field::kLostRingbuf, lost.ringbuf},
  };
  record.update(histogram_to_json(h));
  if (function.span) {
    record[field::kKind] = field::kSpanKind;
    record[field::kLostSpanReused] = lost.span_reused;
    record[field::kLostSpanFull] = lost.span_full;
    record[field::kLostSpanOpen] = lost.span_open;
    record[field::kSpanUnstarted] = lost.span_unstarted;
  }
  if (const auto& split = total ? function.total_split : function.interval_split) {
    record[field::kOncpu] = histogram_to_json(split->oncpu);
    record[field::kRunnable] = histogram_to_json(split->runnable);
    record[field::kBlocked] = histogram_to_json(split->blocked);
    record[field::kSplitUnknown] = lost.split_unknown;
  }
  // --self: the calls' exclusive time, a histogram like the wall one.
  if (const auto& self = total ? function.total_self : function.interval_self) {
    record[field::kSelf] = histogram_to_json(*self);
  }
  // --by: the series' own pid wins over -p's; they mean the same process.
  if (function.series.pid) {
    record[field::kPid] = *function.series.pid;
  } else if (function.pid) {
    record[field::kPid] = function.pid;
  }
  for (const auto& [key, value] : {std::pair{field::kComm, &function.series.comm},
                                   std::pair{field::kCgroup, &function.series.cgroup},
                                   std::pair{field::kContainerId, &function.series.container_id},
                                   std::pair{field::kPodUid, &function.series.pod_uid},
                                   std::pair{field::kRuntime, &function.series.runtime},
                                   std::pair{field::kRetval, &function.series.retval},
                                   std::pair{field::kArg, &function.series.arg}}) {
    if (*value) record[key] = **value;
  }
  if (function.series.arg_index) record[field::kArgIndex] = *function.series.arg_index;
  // --config: the target's name and its extra labels.
  if (!function.labels.empty()) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [name, value] : function.labels) labels[name] = value;
    record[field::kLabels] = std::move(labels);
  }
  if (function.series.other) record[field::kSeries] = "other";
  if (function.series_ended) record[field::kSeriesEnded] = true;
  if (report.series_folded) record[field::kSeriesFolded] = report.series_folded;
  if (report.kernel_memory_bytes) record[field::kKernelMemoryBytes] = report.kernel_memory_bytes;
  // --slowest: the calls of the histogram above, slowest first.
  const auto& slowest = total ? function.total_slowest : function.interval_slowest;
  if (!slowest.empty()) {
    nlohmann::json exemplars = nlohmann::json::array();
    for (const SlowCall& call : slowest) exemplars.push_back(slow_call_to_json(call));
    record[field::kExemplars] = std::move(exemplars);
  }
  if (!slowest.empty() || lost.slow_dropped) record[field::kSlowDropped] = lost.slow_dropped;
  return record;
}

// --follow/--config: the agent's own record, after the functions'.
nlohmann::json agent_to_json(const Report& report, const AgentStatus& agent) {
  nlohmann::json failures = nlohmann::json::object();
  for (const auto& [reason, count] : agent.attach_failures) failures[reason] = count;
  return {{field::kType, field::kAgent},
          {field::kTime, format_rfc3339(report.time)},
          {"config_last_reload_successful", agent.config_last_reload_successful},
          {"config_reload_failures", agent.config_reload_failures},
          {"functions_attached", agent.functions_attached},
          {"files_attached", agent.files_attached},
          {"processes_seen", agent.processes_seen},
          {"exec_dropped", agent.exec_dropped},
          {"attach_failures", std::move(failures)},
          {"ringbuf_dropped", report.ringbuf_dropped_total},
          {field::kSeriesFolded, report.series_folded},
          {field::kSeriesExpired, report.series_expired},
          {"probe_cpu_seconds", agent.probe_cpu_seconds}};
}

void JsonSink::write(const Report& report) {
  if (broken()) return;
  std::string text;
  for (const auto& function : report.functions) {
    text += record_text(function_to_json(report, function));
  }
  if (report.agent) text += agent_to_json(report, *report.agent).dump() + '\n';
  print(text);
}

void JsonSink::write_slow_call(const SlowCallReport& slow) {
  print(record_text(slow_call_report_to_json(slow)));
}

}  // namespace funclatency
