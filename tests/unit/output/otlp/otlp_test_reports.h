// Synthetic reports with known durations, decoding helpers, and the options
// resolution the options and TLS tests share, for the OTLP tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <map>
#include <string>

#include "model/report.h"
#include "opentelemetry/proto/common/v1/common.pb.h"
#include "output/otlp/otlp_options.h"

namespace funclatency::testing {

// A histogram's rows, as the explicit buckets carry them.
inline constexpr int kRows = LatencyHistogram::kLog2Rows;

// The options `env` and `cli` resolve to; a test failure when they are refused.
inline OtlpOptions resolve_ok(const EnvironmentMap& env,
                              const OtlpCliValues& cli = {.enabled = true}) {
  auto options = resolve_otlp_options(env, cli);
  EXPECT_TRUE(options.has_value()) << (options ? "" : options.error().message());
  return options.value_or(OtlpOptions{});
}

inline uint64_t nanos(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

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

// --cpu-split parts of calls of `durations_ns`: half of each call on a CPU,
// an eighth waiting for one, the rest blocked.
inline CpuSplit split_of(std::initializer_list<uint64_t> durations_ns, uint64_t unit_ns = 1000) {
  CpuSplit split{LatencyHistogram(unit_ns), LatencyHistogram(unit_ns), LatencyHistogram(unit_ns)};
  for (uint64_t d : durations_ns) {
    split.oncpu.record(d / 2);
    split.runnable.record(d / 8);
    split.blocked.record(d - d / 2 - d / 8);
  }
  return split;
}

// With `cpu_split`, every function has the split of its calls (split_of).
inline Report sample_report(uint64_t unit_ns = 1000, bool cpu_split = false) {
  using namespace std::chrono_literals;
  Report report;
  report.kind = Report::Kind::kInterval;
  report.run_start = std::chrono::system_clock::time_point(1'700'000'000s);
  report.interval_start = report.run_start + 10s;
  report.time = report.run_start + 11s;
  auto function = [&](std::string symbol, std::string binary, std::initializer_list<uint64_t> total,
                      std::initializer_list<uint64_t> interval) {
    FunctionReport f;
    f.symbol = std::move(symbol);
    f.binary = std::move(binary);
    f.pid = 4242;
    f.mode = AggregationMode::kEvents;
    f.total = histogram_of(total, unit_ns);
    f.interval = histogram_of(interval, unit_ns);
    if (cpu_split) {
      f.total_split = split_of(total, unit_ns);
      f.interval_split = split_of(interval, unit_ns);
    }
    return f;
  };
  FunctionReport slow_op =
      function("slow_op", "/usr/bin/target-app", kSampleDurationsNs, {3000, 1'000'000});
  slow_op.total_lost = {.unreturned = 3, .depth = 1, .ringbuf = 2};
  slow_op.interval_lost = {.unreturned = 1, .depth = 0, .ringbuf = 1};
  report.functions = {slow_op, function("fast_op", "/usr/lib/libfast.so", {500, 700, 5000}, {700})};
  report.ringbuf_dropped_total = 2;
  return report;
}

// --slowest: a call of `duration_ns` by thread `tid` of process 4242 at
// `time`, with `frames` stack frames: frame i is "fn<i>" at offset 0x10 + i
// in /usr/bin/target-app, but every third has no symbol and the last no binary.
inline SlowCall slow_call(uint64_t duration_ns, int tid, std::chrono::system_clock::time_point time,
                          size_t frames = 0, std::string thread = "worker") {
  SlowCall call;
  call.duration_ns = duration_ns;
  call.pid = 4242;
  call.tid = tid;
  call.thread = std::move(thread);
  call.time = time;
  for (size_t i = 0; i < frames; i++) {
    StackFrame frame{.address = 0x401000 + 0x100 * i, .offset = 0x10 + i};
    if (i % 3 != 2) frame.symbol = "fn" + std::to_string(i);
    if (i + 1 < frames) frame.binary = "/usr/bin/target-app";
    call.stack.push_back(frame);
  }
  return call;
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
