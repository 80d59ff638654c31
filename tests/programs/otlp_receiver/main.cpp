// otlp-receiver: a real OTLP receiver for end-to-end tests. Listens on
// 127.0.0.1 for OTLP/HTTP (protobuf and JSON) and OTLP/gRPC, and prints
// one JSON line per accepted export request on stdout:
//   {"listening": {"http": PORT, "grpc": PORT}}            (first line)
//   {"transport": "http", "request": {ExportMetricsServiceRequest as JSON}}
// With --tls-cert/--tls-key both speak TLS (--tls-client-ca: mutual TLS).
// Runs until SIGINT or SIGTERM.
#include <google/protobuf/util/json_util.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>

#include "otlp_test_receiver.h"

int main(int argc, char** argv) {
  using namespace funclatency::testing;
  CLI::App app{"OTLP receiver for funclatency's tests"};
  int http_port = 0, grpc_port = 0, fail_first = 0, failure_status = 503, delay_ms = 0;
  app.add_option("--http-port", http_port, "0 picks a free port");
  app.add_option("--grpc-port", grpc_port, "0 picks a free port");
  app.add_option("--fail-first", fail_first, "refuse the first N requests of each transport");
  app.add_option("--failure-status", failure_status, "HTTP status for refused requests");
  app.add_option("--delay-ms", delay_ms, "hold every request this long");
  ReceiverTls tls;
  app.add_option("--tls-cert", tls.cert_file, "serve TLS with this certificate (PEM)");
  app.add_option("--tls-key", tls.key_file, "... and this key");
  app.add_option("--tls-client-ca", tls.client_ca_file, "require a client certificate it signed");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  ReceiverBehavior http_behavior;
  http_behavior.fail_first = fail_first;
  http_behavior.failure_status = failure_status;
  http_behavior.delay = std::chrono::milliseconds(delay_ms);
  ReceiverBehavior grpc_behavior = http_behavior;
  grpc_behavior.failure_status = 14;  // UNAVAILABLE
  auto http = start_http_receiver(http_behavior, http_port, tls);
  auto grpc = start_grpc_receiver(grpc_behavior, grpc_port, tls);
  if (!http || !grpc) {
    std::fprintf(stderr, "otlp-receiver: cannot listen on 127.0.0.1\n");
    return 1;
  }
  std::printf("{\"listening\": {\"http\": %d, \"grpc\": %d}}\n", http->port(), grpc->port());
  std::fflush(stdout);

  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  print.always_print_enums_as_ints = true;
  size_t printed[2] = {0, 0};
  OtlpTestReceiver* receivers[2] = {http.get(), grpc.get()};
  auto print_new = [&] {
    for (int r = 0; r < 2; r++) {
      auto all = receivers[r]->received();
      for (; printed[r] < all.size(); printed[r]++) {
        const auto& item = all[printed[r]];
        if (!item.decoded) continue;
        std::string json;
        google::protobuf::util::MessageToJsonString(item.request, &json, print);
        std::printf("{\"transport\": \"%s\", \"index\": %zu, \"request\": %s}\n",
                    item.transport.c_str(), printed[r], json.c_str());
      }
    }
    std::fflush(stdout);
  };
  timespec tick{0, 50'000'000};
  while (sigtimedwait(&signals, nullptr, &tick) < 0) print_new();
  http->stop();
  grpc->stop();
  print_new();
  return 0;
}
