// The command line of the Prometheus endpoint: `--prometheus [[ADDR:]PORT]`,
// `--prometheus-prefix PREFIX` and `--web-config FILE`, and the sink they
// describe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "model/sink.h"

namespace CLI {
class App;
}

namespace funclatency {

struct PrometheusCliValues {
  bool enabled = false;  // --prometheus was given
  std::string listen;    // [ADDR:]PORT; 127.0.0.1:9464 when given without a value
  std::string prefix = "ebpf";
  std::string web_config;  // exporter-toolkit web configuration file; empty: none
};

void add_prometheus_options(CLI::App& app, PrometheusCliValues& values);

// Reads the web-config and binds the endpoint (call it before attaching
// anything: a bad web-config or a port in use is a kBadInput error) and returns the sink serving
// it; nullptr when --prometheus was not given. `log` hears what the server
// thread says later (main: one line each to stderr).
Result<std::unique_ptr<Sink>> make_prometheus_sink(const PrometheusCliValues& values,
                                                   std::function<void(std::string_view)> log = {});

}  // namespace funclatency
