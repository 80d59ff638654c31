#include "otlp_test_receiver.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <zlib.h>

#include <fstream>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"

namespace funclatency::testing {
namespace {

namespace collector_pb = opentelemetry::proto::collector::metrics::v1;

bool gunzip(const std::string& input, std::string& output) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) return false;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  char buffer[16384];
  int result = Z_OK;
  while (result == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    result = inflate(&stream, Z_NO_FLUSH);
    output.append(buffer, sizeof(buffer) - stream.avail_out);
  }
  inflateEnd(&stream);
  return result == Z_STREAM_END;
}

collector_pb::ExportMetricsServiceResponse response_for(const ReceiverBehavior& behavior) {
  collector_pb::ExportMetricsServiceResponse response;
  if (behavior.partial_rejected != 0 || !behavior.partial_message.empty()) {
    response.mutable_partial_success()->set_rejected_data_points(behavior.partial_rejected);
    response.mutable_partial_success()->set_error_message(behavior.partial_message);
  }
  return response;
}

class HttpReceiver final : public OtlpTestReceiver {
 public:
  HttpReceiver(ReceiverBehavior behavior, const ReceiverTls& tls)
      : OtlpTestReceiver(std::move(behavior)),
        owned_(tls.cert_file.empty()
                   ? std::make_unique<httplib::Server>()
                   : std::make_unique<httplib::SSLServer>(
                         tls.cert_file.c_str(), tls.key_file.c_str(),
                         tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str())),
        server_(*owned_) {
    // stop() waits for idle keep-alive connections to time out.
    server_.set_keep_alive_timeout(1);
    server_.Post("/v1/metrics",
                 [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
  }
  ~HttpReceiver() override { stop(); }

  bool start(int port) {
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
    if (port_ <= 0) return false;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be missed by httplib and
    // leave the loop running forever.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return server_.is_running();
  }
  int port() const override { return port_; }
  void stop() override {
    interrupt_delays();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    ReceivedExport received;
    received.transport = "http";
    for (const auto& [key, value] : req.headers) {
      std::string lowered = key;
      for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      received.headers[lowered] = value;
    }
    received.content_type = req.get_header_value("Content-Type");
    received.content_encoding = req.get_header_value("Content-Encoding");
    // httplib inflates gzip bodies itself when built with zlib; inflate here
    // only if it did not.
    std::string body = req.body;
    if (body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
        static_cast<unsigned char>(body[1]) == 0x8b) {
      std::string inflated;
      if (gunzip(body, inflated)) body = std::move(inflated);
    }
    bool json = received.content_type.find("json") != std::string::npos;
    if (json) {
      received.decoded = google::protobuf::util::JsonStringToMessage(body, &received.request).ok();
    } else {
      received.decoded = received.request.ParseFromString(body);
    }
    bool decoded = received.decoded;
    int status = on_request(std::move(received));
    if (status != 0) {
      res.status = status;
      if (!behavior_.retry_after.empty()) res.set_header("Retry-After", behavior_.retry_after);
      res.set_content("refused by the test receiver", "text/plain");
      return;
    }
    if (!decoded) {
      res.status = 400;
      return;
    }
    auto response = response_for(behavior_);
    std::string out;
    if (json) {
      google::protobuf::util::MessageToJsonString(response, &out);
      res.set_content(out, "application/json");
    } else {
      response.SerializeToString(&out);
      res.set_content(out, "application/x-protobuf");
    }
  }

  std::unique_ptr<httplib::Server> owned_;
  httplib::Server& server_;
  std::thread thread_;
  int port_ = -1;
};

class GrpcReceiver final : public OtlpTestReceiver, public collector_pb::MetricsService::Service {
 public:
  GrpcReceiver(ReceiverBehavior behavior, const ReceiverTls& tls)
      : OtlpTestReceiver(std::move(behavior)), tls_(tls) {}
  ~GrpcReceiver() override { stop(); }

  bool start(int port) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port), credentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    return server_ && port_ > 0;
  }
  int port() const override { return port_; }
  void stop() override {
    interrupt_delays();
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
      server_->Wait();
      server_.reset();
    }
  }

  std::shared_ptr<grpc::ServerCredentials> credentials() const {
    if (tls_.cert_file.empty()) return grpc::InsecureServerCredentials();
    auto read = [](const std::string& path) {
      std::ifstream file(path);
      return std::string(std::istreambuf_iterator<char>(file), {});
    };
    grpc::SslServerCredentialsOptions options(
        tls_.client_ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                    : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    if (!tls_.client_ca_file.empty()) options.pem_root_certs = read(tls_.client_ca_file);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    pair.private_key = read(tls_.key_file);
    pair.cert_chain = read(tls_.cert_file);
    options.pem_key_cert_pairs.push_back(pair);
    return grpc::SslServerCredentials(options);
  }

  grpc::Status Export(grpc::ServerContext* context,
                      const collector_pb::ExportMetricsServiceRequest* request,
                      collector_pb::ExportMetricsServiceResponse* response) override {
    ReceivedExport received;
    received.transport = "grpc";
    for (const auto& [key, value] : context->client_metadata()) {
      received.headers[std::string(key.data(), key.size())] =
          std::string(value.data(), value.size());
    }
    received.decoded = true;
    received.request = *request;
    int status = on_request(std::move(received));
    if (status != 0) {
      return grpc::Status(static_cast<grpc::StatusCode>(status), "refused by the test receiver");
    }
    *response = response_for(behavior_);
    return grpc::Status::OK;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
  ReceiverTls tls_;
  int port_ = 0;
};

}  // namespace

std::vector<ReceivedExport> OtlpTestReceiver::received() const {
  std::lock_guard lock(mutex_);
  return received_;
}

size_t OtlpTestReceiver::request_count() const {
  std::lock_guard lock(mutex_);
  return received_.size();
}

size_t OtlpTestReceiver::accepted_count() const {
  std::lock_guard lock(mutex_);
  return accepted_;
}

bool OtlpTestReceiver::wait_for_accepted(size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return accepted_ >= count; });
}

int OtlpTestReceiver::on_request(ReceivedExport received) {
  received.arrived = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  size_t index = received_.size();
  received_.push_back(std::move(received));
  changed_.notify_all();
  if (behavior_.delay.count() > 0) {
    changed_.wait_for(lock, behavior_.delay, [&] { return stopping_; });
  }
  if (static_cast<int>(index) < behavior_.fail_first) return behavior_.failure_status;
  if (!received_[index].decoded) return 0;
  accepted_++;
  changed_.notify_all();
  return 0;
}

void OtlpTestReceiver::interrupt_delays() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  changed_.notify_all();
}

std::unique_ptr<OtlpTestReceiver> start_http_receiver(ReceiverBehavior behavior, int port,
                                                      const ReceiverTls& tls) {
  auto receiver = std::make_unique<HttpReceiver>(std::move(behavior), tls);
  if (!receiver->start(port)) return nullptr;
  return receiver;
}

std::unique_ptr<OtlpTestReceiver> start_grpc_receiver(ReceiverBehavior behavior, int port,
                                                      const ReceiverTls& tls) {
  auto receiver = std::make_unique<GrpcReceiver>(std::move(behavior), tls);
  if (!receiver->start(port)) return nullptr;
  return receiver;
}

}  // namespace funclatency::testing
