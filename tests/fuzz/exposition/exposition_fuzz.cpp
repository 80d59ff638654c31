// libFuzzer target for the Prometheus/OpenMetrics encoder: label values of
// any bytes (quotes, newlines, invalid UTF-8), --by series labels set or not,
// any counts, any prefix and Accept header. The exposition must come out
// whole: every sample line ends where it should, and OpenMetrics closes with
// "# EOF".
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>

#include "output/prometheus/exposition.h"

using namespace funclatency;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  (void)negotiate_format(input.ConsumeRandomLengthString(64));
  auto prefix = validate_metric_prefix(input.ConsumeRandomLengthString(16));

  MetricsSnapshot snapshot;
  snapshot.ringbuf_dropped_total = input.ConsumeIntegral<uint64_t>();
  size_t functions = input.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < functions; i++) {
    FunctionMetrics function;
    function.symbol = input.ConsumeRandomLengthString(40);
    function.binary = input.ConsumeRandomLengthString(40);
    function.pid = input.ConsumeIntegral<int>();
    const uint64_t units[] = {1, 1000, 1000000};
    function.unit_ns = units[input.ConsumeIntegralInRange<int>(0, 2)];
    for (auto& count : function.log2_counts) {
      count = input.ConsumeIntegralInRange<uint64_t>(0, 1u << 20);
      function.count += count;
    }
    function.sum_ns = input.ConsumeIntegral<uint64_t>();
    function.lost.unreturned = input.ConsumeIntegral<uint32_t>();
    function.lost.ringbuf = input.ConsumeIntegral<uint32_t>();
    // --by: series labels of any bytes, some unset (the others' then empty).
    for (auto* label : {&function.series.comm, &function.series.cgroup,
                        &function.series.container_id, &function.series.pod_uid}) {
      if (input.ConsumeBool()) *label = input.ConsumeRandomLengthString(40);
    }
    if (input.ConsumeBool()) function.series.pid = function.pid;
    function.series.other = input.ConsumeBool();
    snapshot.functions.push_back(std::move(function));
  }

  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    std::string text = render_exposition(snapshot, format, prefix ? *prefix : "ebpf");
    if (!text.empty() && text.back() != '\n') std::abort();
    if (format == ExpositionFormat::kOpenMetrics &&
        (text.size() < 6 || text.compare(text.size() - 6, 6, "# EOF\n") != 0)) {
      std::abort();
    }
    // A label value's newline must be escaped: no line may start with a
    // character that cannot begin a sample or a comment.
    size_t start = 0;
    while (start < text.size()) {
      char first = text[start];
      bool ok = first == '#' || first == '_' || (first >= 'a' && first <= 'z') ||
                (first >= 'A' && first <= 'Z');
      if (!ok) std::abort();
      start = text.find('\n', start) + 1;
    }
  }
  return 0;
}
