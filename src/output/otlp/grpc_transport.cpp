// OTLP/gRPC through grpc++: MetricsService/Export on one channel.
#include <grpcpp/grpcpp.h>

#include <mutex>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
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
  bool tls = endpoint.starts_with("https://");
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
  auto credentials = tls ? grpc::SslCredentials(grpc::SslCredentialsOptions())
                         : grpc::InsecureChannelCredentials();
  auto channel = grpc::CreateCustomChannel(target, credentials, arguments);
  if (!channel) return runtime_error("create gRPC channel to " + target);
  return std::make_unique<GrpcTransport>(options, std::move(channel));
}

}  // namespace funclatency
