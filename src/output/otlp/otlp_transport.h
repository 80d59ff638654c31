// Sending one ExportMetricsServiceRequest: the transports (HTTP via libcurl,
// gRPC via grpc++) behind one interface, and the pure rules that decide what
// to do with their answer (retry or not, how long to wait).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "common/error.h"
#include "output/otlp/otlp_convert.h"
#include "output/otlp/otlp_options.h"

namespace funclatency {

// Where the exporter reports what went wrong; main passes one that writes
// to stderr. Helpers never print themselves.
using OtlpLogFunction = std::function<void(std::string_view)>;

struct ExportOutcome {
  enum class Status {
    kSuccess,    // accepted (maybe partially: see rejected_data_points)
    kRetryable,  // 429/502/503/504, connection failures, timeouts, UNAVAILABLE...
    kPermanent,  // any other rejection: sending the same request again cannot help
  };
  Status status = Status::kSuccess;
  std::string detail;  // "HTTP 503", "Failed to connect ...", "UNAVAILABLE: ..."
  std::optional<std::chrono::milliseconds> retry_after;  // the server's hint
  int64_t rejected_data_points = 0;                      // partial success
  std::string partial_success_message;
  bool partial_success() const {
    return rejected_data_points != 0 || !partial_success_message.empty();
  }
};

class OtlpTransport {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~OtlpTransport() = default;
  // Blocks until the collector answers, the deadline passes or abort() is
  // called; never longer than the deadline.
  virtual ExportOutcome send(const otlp_pb::ExportMetricsServiceRequest& request,
                             Clock::time_point deadline) = 0;
  // From another thread, at shutdown: the send in progress and every later
  // one return at once (retryable).
  virtual void abort() = 0;
};

Result<std::unique_ptr<OtlpTransport>> make_http_transport(const OtlpOptions& options);
Result<std::unique_ptr<OtlpTransport>> make_grpc_transport(const OtlpOptions& options);
Result<std::unique_ptr<OtlpTransport>> make_otlp_transport(const OtlpOptions& options);

// OTLP/HTTP: 429, 502, 503 and 504 are worth retrying; other statuses that
// are not 2xx are not.
ExportOutcome::Status classify_http_status(long status);
// Retry-After as delay-seconds or as an HTTP date (seen from `now`).
// The longest wait a Retry-After may ask for; longer ones are cut to it (a
// receiver must not park the exporter for good, nor overflow the clock).
inline constexpr std::chrono::seconds kMaxRetryAfter{300};
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);
// gzip framing (RFC 1952) of a body, for Content-Encoding: gzip.
Result<std::string> gzip_compress(std::string_view body);

// Delay before the next attempt after `failed_attempts` failures (>= 1);
// `random_unit` in [0, 1) supplies the jitter. A server's Retry-After, when
// longer, wins.
std::chrono::milliseconds retry_delay(const OtlpRetryPolicy& policy, int failed_attempts,
                                      double random_unit,
                                      std::optional<std::chrono::milliseconds> retry_after);

}  // namespace funclatency
