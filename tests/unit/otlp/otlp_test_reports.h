// Synthetic reports with known durations, and decoding helpers, for the
// OTLP tests.
#pragma once

#include <chrono>
#include <initializer_list>
#include <map>
#include <string>

#include "opentelemetry/proto/common/v1/common.pb.h"
#include "output/report.h"

namespace funclatency::testing {

inline LatencyHistogram histogram_of(std::initializer_list<uint64_t> durations_ns,
                                     uint64_t unit_ns = 1000) {
  LatencyHistogram histogram(unit_ns);
  for (uint64_t d : durations_ns) histogram.record(d);
  return histogram;
}

// Durations spread over many console rows, edges included: 0 ns, 999 ns and
// 1999 ns (row 0 in usec), exactly 2 us, 3 us, 1 ms, 1.5 ms, 40 ms.
inline constexpr std::initializer_list<uint64_t> kSampleDurationsNs = {
    0, 999, 1999, 2000, 3000, 3000, 1'000'000, 1'500'000, 40'000'000};

inline Report sample_report(uint64_t unit_ns = 1000) {
  using namespace std::chrono_literals;
  Report report;
  report.kind = Report::Kind::kInterval;
  report.run_start = std::chrono::system_clock::time_point(1'700'000'000s);
  report.interval_start = report.run_start + 10s;
  report.time = report.run_start + 11s;
  FunctionReport slow_op;
  slow_op.symbol = "slow_op";
  slow_op.binary = "/usr/bin/target-app";
  slow_op.pid = 4242;
  slow_op.mode = "events";
  slow_op.total = histogram_of(kSampleDurationsNs, unit_ns);
  slow_op.interval = histogram_of({3000, 1'000'000}, unit_ns);
  slow_op.total_lost = {.unreturned = 3, .depth = 1, .ringbuf = 2};
  slow_op.interval_lost = {.unreturned = 1, .depth = 0, .ringbuf = 1};
  FunctionReport fast_op;
  fast_op.symbol = "fast_op";
  fast_op.binary = "/usr/lib/libfast.so";
  fast_op.pid = 4242;
  fast_op.mode = "events";
  fast_op.total = histogram_of({500, 700, 5000}, unit_ns);
  fast_op.interval = histogram_of({700}, unit_ns);
  report.functions = {slow_op, fast_op};
  report.ringbuf_dropped_total = 2;
  return report;
}

// Attributes as key -> value text (ints in decimal).
inline std::map<std::string, std::string> attributes_of(
    const google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>&
        attributes) {
  std::map<std::string, std::string> out;
  for (const auto& attribute : attributes) {
    const auto& value = attribute.value();
    out[attribute.key()] =
        value.has_int_value() ? std::to_string(value.int_value()) : value.string_value();
  }
  return out;
}

}  // namespace funclatency::testing
