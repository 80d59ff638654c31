#include "output/exporter_module.h"
#include "output/prometheus/prometheus_module.h"

namespace funclatency {

Result<std::unique_ptr<Sink>> load_prometheus_sink(const PrometheusCliValues& values,
                                                   std::function<void(std::string_view)> log) {
  if (!values.enabled) return std::unique_ptr<Sink>();
  auto entry = load_exporter_entry(kPrometheusModuleFile, kPrometheusModuleEntry, "--prometheus");
  if (!entry) return std::unexpected(entry.error());
  Result<std::unique_ptr<Sink>> sink = runtime_error("the Prometheus exporter made no sink");
  reinterpret_cast<PrometheusModuleEntry> (*entry)(values, log, sink);
  return sink;
}

}  // namespace funclatency
