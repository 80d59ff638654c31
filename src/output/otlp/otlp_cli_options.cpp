#include "output/otlp/otlp_cli_options.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace funclatency {
namespace {
std::vector<std::string> protocol_names() {
  std::vector<std::string> names;
  for (const auto& [protocol, name] : kOtlpProtocolNames) names.emplace_back(name);
  return names;
}
}  // namespace

void add_otlp_options(CLI::App& app, OtlpCliValues& values) {
  // An optional value: "--otlp" alone uses the endpoint from OTEL_* or the
  // default; "--otlp=URL" or "--otlp URL" names one.
  app.add_option_function<std::vector<std::string>>(
         "--otlp",
         [&values](const std::vector<std::string>& given) {
           values.enabled = true;
           if (!given.empty()) values.endpoint = given.front();
         },
         "Export the latency histograms over OTLP to URL (default: OTEL_EXPORTER_OTLP_* or "
         "http://localhost:4318, :4317 for grpc)")
      ->expected(0, 1)
      ->allow_extra_args(false)  // "--otlp=URL TARGET" must leave TARGET alone
      ->type_name("URL");
  app.add_option("--otlp-protocol", values.protocol,
                 "OTLP transport: http/protobuf (default), http/json or grpc")
      ->check(CLI::IsMember(protocol_names()));
  app.add_option("--otlp-histogram", values.histogram,
                 "explicit (default: bounds at the console's log2 rows, in ms) or exponential "
                 "(base 2, scale 0, in the display unit)")
      ->check(CLI::IsMember({"explicit", "exponential"}));
  app.add_option("--otlp-temporality", values.temporality, "cumulative (default) or delta")
      ->check(CLI::IsMember({"cumulative", "delta"}));
  app.add_flag("--otlp-pid-attribute", values.pid_attribute,
               "Add a pid attribute to each series (one series per traced process)");
}

}  // namespace funclatency
