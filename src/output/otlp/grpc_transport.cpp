// OTLP/gRPC through grpc++: MetricsService/Export on one channel, with TLS
// from the certificates of otlp_tls.h.
#include <grpcpp/grpcpp.h>

#include <mutex>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "output/otlp/otlp_tls.h"
#include "output/otlp/otlp_transport.h"

namespace funclatency {
namespace {

using opentelemetry::proto::collector::metrics::v1::MetricsService;

// The OTLP specification's retryable gRPC codes. RESOURCE_EXHAUSTED is
// retryable only with a RetryInfo detail, which this exporter does not
// decode, so it is treated as final.
ExportOutcome::Status classify_grpc_status(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return ExportOutcome::Status::kSuccess;
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DATA_LOSS:
      return ExportOutcome::Status::kRetryable;
    default:
      return ExportOutcome::Status::kPermanent;
  }
}

// gRPC reports a failed handshake as UNAVAILABLE, like a receiver that is
// down; only its message tells that the certificate did not verify.
bool is_certificate_failure(std::string_view message) {
  for (std::string_view mark : {"CERTIFICATE_VERIFY_FAILED", "certificate verify failed"}) {
    if (message.find(mark) != std::string_view::npos) return true;
  }
  return false;
}

class GrpcTransport final : public OtlpTransport {
 public:
  GrpcTransport(const OtlpOptions& options, std::shared_ptr<grpc::Channel> channel)
      : options_(options), stub_(MetricsService::NewStub(channel)), channel_(std::move(channel)) {}

  ExportOutcome send(const otlp_pb::ExportMetricsServiceRequest& request,
                     Clock::time_point deadline) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + (deadline - Clock::now()));
    for (const auto& [key, value] : options_.headers) {
      std::string lowered = key;  // gRPC metadata keys are lower case
      for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      context.AddMetadata(lowered, value);
    }
    if (options_.gzip) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    {
      std::lock_guard lock(mutex_);
      if (aborted_) return {ExportOutcome::Status::kRetryable, "aborted at shutdown"};
      active_ = &context;
    }
    otlp_pb::ExportMetricsServiceResponse response;
    grpc::Status status = stub_->Export(&context, request, &response);
    {
      std::lock_guard lock(mutex_);
      active_ = nullptr;
    }
    ExportOutcome outcome;
    outcome.status = classify_grpc_status(status.error_code());
    if (!status.ok()) {
      outcome.detail =
          "gRPC status " + std::to_string(status.error_code()) + ": " + status.error_message();
      if (is_certificate_failure(status.error_message())) {
        // Retrying cannot make a certificate verify.
        outcome.status = ExportOutcome::Status::kPermanent;
        outcome.detail =
            certificate_refused(options_.endpoint, options_.tls, status.error_message());
      }
      return outcome;
    }
    outcome.detail = "gRPC OK";
    if (response.has_partial_success()) {
      outcome.rejected_data_points = response.partial_success().rejected_data_points();
      outcome.partial_success_message = response.partial_success().error_message();
    }
    return outcome;
  }

  void abort() override {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    if (active_) active_->TryCancel();
  }

 private:
  OtlpOptions options_;
  std::unique_ptr<MetricsService::Stub> stub_;
  std::shared_ptr<grpc::Channel> channel_;
  std::mutex mutex_;
  grpc::ClientContext* active_ = nullptr;
  bool aborted_ = false;
};

}  // namespace

Result<std::unique_ptr<OtlpTransport>> make_grpc_transport(const OtlpOptions& options) {
  std::string_view endpoint = options.endpoint;
  bool tls = options.tls.enabled;
  auto material = load_otlp_tls(options.tls);
  if (!material) return std::unexpected(material.error());
  if (auto scheme_end = endpoint.find("://"); scheme_end != std::string_view::npos) {
    endpoint.remove_prefix(scheme_end + 3);
  }
  std::string target(endpoint.substr(0, endpoint.find('/')));
  grpc::ChannelArguments arguments;
  // A collector that was down must be found again within seconds, not after
  // gRPC's default reconnect backoff of up to two minutes.
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  arguments.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, "funclatency/" FUNCLATENCY_VERSION);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = material->ca_pem;  // empty: gRPC's default roots
  ssl.pem_cert_chain = material->client_cert_pem;
  ssl.pem_private_key = material->client_key_pem;
  auto credentials = tls ? grpc::SslCredentials(ssl) : grpc::InsecureChannelCredentials();
  auto channel = grpc::CreateCustomChannel(target, credentials, arguments);
  if (!channel) return runtime_error("create gRPC channel to " + target);
  return std::make_unique<GrpcTransport>(options, std::move(channel));
}

}  // namespace funclatency
