#include <CLI/CLI.hpp>

#include "http/listen_address.h"
#include "output/prometheus/prometheus_cli.h"

namespace funclatency {

void add_prometheus_options(CLI::App& app, PrometheusCliValues& values) {
  std::string default_listen =
      ListenAddress{std::string(kDefaultPrometheusHost), kDefaultPrometheusPort}.to_string();
  auto* listen =
      app.add_option_function<std::string>(
             "--prometheus",
             [&values](const std::string& text) {
               values.enabled = true;
               values.listen = text;
             },
             "Serve cumulative latency histograms for Prometheus at http://ADDR:PORT/metrics\n"
             "(default " +
                 default_listen + "; PORT alone listens on 127.0.0.1, :PORT on every interface)")
          ->expected(0, 1)
          ->default_str(default_listen)
          ->type_name("[ADDR:]PORT")
          // Checked at parse time, so a mistyped address is a usage error
          // before anything else happens. CLI11 names the option itself.
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                auto address = parse_listen_address(text);
                if (address) return {};
                std::string message = address.error().message();
                std::string_view own_name = "--prometheus ";
                if (message.starts_with(own_name)) message.erase(0, own_name.size());
                return message;
              },
              "", "[ADDR:]PORT"));
  app.add_option("--prometheus-prefix", values.prefix,
                 "Prefix of the Prometheus metric names (PREFIX_function_latency_ms, ...)")
      ->capture_default_str()
      ->needs(listen);
  app.add_option("--web-config", values.web_config,
                 "Serve /metrics with TLS and basic auth from an exporter-toolkit web config\n"
                 "(the file node_exporter's --web.config.file reads)")
      ->type_name("FILE")
      ->needs(listen);
}

}  // namespace funclatency
