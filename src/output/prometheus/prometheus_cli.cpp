#include "output/prometheus/prometheus_cli.h"

#include "http/listen_address.h"
#include "output/prometheus/prometheus_sink.h"

namespace funclatency {

Result<std::unique_ptr<Sink>> make_prometheus_sink(const PrometheusCliValues& values,
                                                   std::function<void(std::string_view)> log) {
  if (!values.enabled) return std::unique_ptr<Sink>();
  auto address = parse_listen_address(values.listen);
  if (!address) return std::unexpected(address.error());
  WebConfig web;
  if (!values.web_config.empty()) {
    auto loaded = load_web_config(values.web_config);
    if (!loaded) return std::unexpected(loaded.error());
    web = std::move(*loaded);
  }
  auto sink = PrometheusSink::listen(*address, values.prefix, web, {},
                                     std::move(log));  // served after the drop
  if (!sink) return std::unexpected(sink.error());
  return std::unique_ptr<Sink>(std::move(*sink));
}

}  // namespace funclatency
