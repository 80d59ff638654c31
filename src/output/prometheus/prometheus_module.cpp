// Built into funclatency-prometheus.so only: the entry the binary looks up.
#include "output/prometheus/prometheus_module.h"

extern "C" [[gnu::visibility("default")]] void funclatency_prometheus_make_sink_v3(
    const funclatency::PrometheusCliValues& values,
    const std::function<void(std::string_view)>& log,
    funclatency::Result<std::unique_ptr<funclatency::Sink>>& sink) {
  sink = funclatency::make_prometheus_sink(values, log);
}

static_assert(std::is_same_v<decltype(&funclatency_prometheus_make_sink_v3),
                             funclatency::PrometheusModuleEntry>);
