// Real OTLP receivers for tests: an HTTP one (cpp-httplib, POST /v1/metrics,
// protobuf or JSON, gzip) and a gRPC one (MetricsService/Export), both on
// 127.0.0.1, plain or TLS (optionally requiring a client certificate). They decode every request
// and can be told to misbehave: fail the first N requests, reject everything, or answer late.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace funclatency::testing {

using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;

struct ReceivedExport {
  std::chrono::steady_clock::time_point arrived;
  std::string transport;                       // "http" or "grpc"
  std::string content_type;                    // HTTP only
  std::string content_encoding;                // HTTP only
  std::map<std::string, std::string> headers;  // HTTP headers / gRPC metadata, keys lower case
  bool decoded = false;
  ExportMetricsServiceRequest request;
};

struct ReceiverBehavior {
  // The first `fail_first` requests get `failure_status` (HTTP status, or
  // gRPC code for the gRPC receiver) and `retry_after` when not empty.
  int fail_first = 0;
  int failure_status = 503;
  std::string retry_after;
  // Every request is held this long before the answer.
  std::chrono::milliseconds delay{0};
  // Reported in every successful answer when non-zero.
  int64_t partial_rejected = 0;
  std::string partial_message;
};

// PEM files; an empty cert_file: plain text. With client_ca_file, a client
// certificate signed by it is required.
struct ReceiverTls {
  std::string cert_file, key_file, client_ca_file;
};

class OtlpTestReceiver {
 public:
  virtual ~OtlpTestReceiver() = default;
  virtual int port() const = 0;
  virtual void stop() = 0;

  std::vector<ReceivedExport> received() const;
  size_t request_count() const;  // every request, failed ones included
  // Waits until at least `count` requests were decoded and answered with success.
  bool wait_for_accepted(size_t count, std::chrono::milliseconds timeout) const;
  size_t accepted_count() const;

 protected:
  explicit OtlpTestReceiver(ReceiverBehavior behavior) : behavior_(std::move(behavior)) {}
  // Records the request; returns the status to answer with (0 = success)
  // after the configured delay (cut short by stop()).
  int on_request(ReceivedExport received);
  void interrupt_delays();

  ReceiverBehavior behavior_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<ReceivedExport> received_;
  size_t accepted_ = 0;
  bool stopping_ = false;
};

// port 0 picks a free port.
std::unique_ptr<OtlpTestReceiver> start_http_receiver(ReceiverBehavior behavior = {}, int port = 0,
                                                      const ReceiverTls& tls = {});
std::unique_ptr<OtlpTestReceiver> start_grpc_receiver(ReceiverBehavior behavior = {}, int port = 0,
                                                      const ReceiverTls& tls = {});

}  // namespace funclatency::testing
