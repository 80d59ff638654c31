// libFuzzer target for the OTLP side: the OTEL_* settings parser (headers,
// resource attributes, endpoints, timeouts) and the Report -> protobuf
// conversion with label values of any bytes and any counts. A request that
// converts must serialize and parse back to the same bytes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>

#include "output/otlp/otlp_convert.h"
#include "output/otlp/otlp_options.h"

using namespace funclatency;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  EnvironmentMap env;
  for (const char* key :
       {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_METRIC_EXPORT_INTERVAL",
        "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_INSECURE",
        "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CLIENT_KEY"}) {
    if (input.ConsumeBool()) env[key] = input.ConsumeRandomLengthString(48);
  }
  OtlpCliValues cli;
  cli.enabled = true;
  if (input.ConsumeBool()) cli.endpoint = input.ConsumeRandomLengthString(32);
  cli.histogram = input.ConsumeBool() ? "exponential" : "explicit";
  cli.pid_attribute = input.ConsumeBool();
  auto options = resolve_otlp_options(env, cli);
  if (!options) return 0;

  Report report;
  report.kind = input.ConsumeBool() ? Report::Kind::kTotal : Report::Kind::kInterval;
  report.time = report.run_start + std::chrono::nanoseconds(input.ConsumeIntegral<uint32_t>());
  const uint64_t units[] = {1, 1000, 1000000};
  uint64_t unit = units[input.ConsumeIntegralInRange<int>(0, 2)];
  size_t functions = input.ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t i = 0; i < functions; i++) {
    FunctionReport function{.symbol = input.ConsumeRandomLengthString(32),
                            .binary = input.ConsumeRandomLengthString(32),
                            .pid = input.ConsumeIntegral<int>(),
                            .mode = AggregationMode::kEvents,
                            .interval = LatencyHistogram(unit),
                            .total = LatencyHistogram(unit)};
    size_t calls = input.ConsumeIntegralInRange<size_t>(0, 64);
    for (size_t c = 0; c < calls; c++) function.total.record(input.ConsumeIntegral<uint64_t>());
    function.interval = function.total;
    function.total_lost.unreturned = input.ConsumeIntegral<uint32_t>();
    report.functions.push_back(std::move(function));
  }
  ExportContext context;
  context.host_name = input.ConsumeRandomLengthString(16);
  auto request = build_export_request(report, *options, context, ExporterHealth{});
  std::string bytes;
  if (!request.SerializeToString(&bytes)) std::abort();
  decltype(request) parsed;
  if (!parsed.ParseFromString(bytes)) std::abort();
  std::string again;
  if (!parsed.SerializeToString(&again) || again != bytes) std::abort();
  return 0;
}
