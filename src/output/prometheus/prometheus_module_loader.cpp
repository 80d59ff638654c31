// What the binary links of the Prometheus exporter: the call into its module.
#include "output/exporter_module.h"
#include "output/prometheus/prometheus_module.h"

namespace funclatency {

Result<std::unique_ptr<Sink>> load_prometheus_sink(const PrometheusCliValues& values,
                                                   std::function<void(std::string_view)> log) {
  if (!values.enabled) return std::unique_ptr<Sink>();
  return sink_from_module<PrometheusModuleEntry>(kPrometheusModuleFile, kPrometheusModuleEntry,
                                                 "--prometheus", "Prometheus", values, log);
}

}  // namespace funclatency
