// otlp-receiver: a real OTLP receiver for end-to-end tests. Listens on
// 127.0.0.1 for OTLP/HTTP (protobuf and JSON) and OTLP/gRPC, and prints
// one JSON line per accepted export request on stdout:
//   {"listening": {"http": PORT, "grpc": PORT}}            (first line)
//   {"transport": "http", "request": {ExportMetricsServiceRequest as JSON}}
// With --tls-cert/--tls-key both speak TLS (--tls-client-ca: mutual TLS).
// Runs until SIGINT or SIGTERM.
#include <getopt.h>
#include <google/protobuf/util/json_util.h>
#include <signal.h>

#include <cstdio>
#include <ctime>
#include <optional>
#include <string>

#include "otlp_test_receiver.h"
#include "workload_support.h"

namespace {

namespace wl = funclatency::workload;

constexpr const char* kUsage =
    "usage: otlp-receiver [--http-port N] [--grpc-port N] [--fail-first N]\n"
    "                     [--failure-status N] [--delay-ms N]\n"
    "                     [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]\n"
    "  --http-port, --grpc-port  0 (default) picks a free port\n"
    "  --fail-first N            refuse the first N requests of each transport\n"
    "  --failure-status N        HTTP status of a refused request (default 503)\n"
    "  --delay-ms N              hold every request this long\n"
    "  --tls-cert, --tls-key     serve TLS with this certificate and key\n"
    "  --tls-client-ca           require a client certificate this CA signed\n";

// The options: getopt_long by target-app's parser (shared with the
// workloads); with CLI11 this file took 8.6 CPU-s to compile.
struct Options final : wl::OptionHandler {
  int http_port = 0, grpc_port = 0, fail_first = 0, failure_status = 503, delay_ms = 0;
  funclatency::testing::ReceiverTls tls;

  static constexpr int kNumbers = 5;  // codes 0-4 take a number, 10-12 a path
  static constexpr ::option kTable[] = {{"http-port", required_argument, nullptr, 0},
                                        {"grpc-port", required_argument, nullptr, 1},
                                        {"fail-first", required_argument, nullptr, 2},
                                        {"failure-status", required_argument, nullptr, 3},
                                        {"delay-ms", required_argument, nullptr, 4},
                                        {"tls-cert", required_argument, nullptr, 10},
                                        {"tls-key", required_argument, nullptr, 11},
                                        {"tls-client-ca", required_argument, nullptr, 12},
                                        {"help", no_argument, nullptr, 'h'},
                                        {nullptr, 0, nullptr, 0}};

  std::optional<int> handle(int code, const char* value) override {
    if (code >= 0 && code < kNumbers) {
      int* numbers[kNumbers] = {&http_port, &grpc_port, &fail_first, &failure_status, &delay_ms};
      auto number = wl::whole_number(value);
      if (!number || *number > 1'000'000'000) {
        return wl::bad_option_value("otlp-receiver", kTable[code].name, value,
                                    "a whole number up to 1000000000");
      }
      *numbers[code] = static_cast<int>(*number);
    } else {
      std::string* paths[] = {&tls.cert_file, &tls.key_file, &tls.client_ca_file};
      *paths[code - 10] = value;
    }
    return std::nullopt;
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace funclatency::testing;
  Options options;
  if (auto code =
          wl::parse_command_line(argc, argv, "otlp-receiver", Options::kTable, kUsage, options)) {
    return *code;
  }
  const auto& [http_port, grpc_port, fail_first, failure_status, delay_ms, tls] = options;

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
