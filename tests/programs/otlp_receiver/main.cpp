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
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "otlp_test_receiver.h"

namespace {

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

// A whole non-negative number, or nullopt.
std::optional<int> number(const char* text) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 1'000'000'000) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace funclatency::testing;
  int http_port = 0, grpc_port = 0, fail_first = 0, failure_status = 503, delay_ms = 0;
  ReceiverTls tls;
  // The options that take a number, by their getopt code; the others take a path.
  int* numbers[] = {&http_port, &grpc_port, &fail_first, &failure_status, &delay_ms};
  std::string* paths[] = {&tls.cert_file, &tls.key_file, &tls.client_ca_file};
  const option table[] = {{"http-port", required_argument, nullptr, 0},
                          {"grpc-port", required_argument, nullptr, 1},
                          {"fail-first", required_argument, nullptr, 2},
                          {"failure-status", required_argument, nullptr, 3},
                          {"delay-ms", required_argument, nullptr, 4},
                          {"tls-cert", required_argument, nullptr, 10},
                          {"tls-key", required_argument, nullptr, 11},
                          {"tls-client-ca", required_argument, nullptr, 12},
                          {"help", no_argument, nullptr, 'h'},
                          {nullptr, 0, nullptr, 0}};
  opterr = 0;
  for (int index = 0, code; (code = getopt_long(argc, argv, "h", table, &index)) != -1;) {
    if (code == 'h') {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (code >= 0 && code <= 4) {
      auto value = number(optarg);
      if (!value) {
        std::fprintf(stderr, "otlp-receiver: --%s wants a whole number, not '%s'\n%s",
                     table[index].name, optarg, kUsage);
        return 2;
      }
      *numbers[code] = *value;
    } else if (code >= 10 && code <= 12) {
      *paths[code - 10] = optarg;
    } else {
      std::fprintf(stderr, "otlp-receiver: unknown option or missing value: %s\n%s",
                   argv[optind - 1], kUsage);
      return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "otlp-receiver: unexpected argument '%s'\n%s", argv[optind], kUsage);
    return 2;
  }

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
