// The Prometheus exporter's module (funclatency-prometheus.so, see
// exporter_module.h): the contract between the binary and the module.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "model/sink.h"
#include "output/prometheus/prometheus_cli.h"

namespace funclatency {

using PrometheusModuleEntry = void (*)(const PrometheusCliValues& values,
                                       const std::function<void(std::string_view)>& log,
                                       Result<std::unique_ptr<Sink>>& sink);
inline constexpr const char* kPrometheusModuleEntry = "funclatency_prometheus_make_sink_v3";
inline constexpr const char* kPrometheusModuleFile = "funclatency-prometheus.so";

// make_prometheus_sink() through the module, which is loaded only when
// --prometheus was given; nullptr otherwise.
Result<std::unique_ptr<Sink>> load_prometheus_sink(const PrometheusCliValues& values,
                                                   std::function<void(std::string_view)> log);

}  // namespace funclatency
