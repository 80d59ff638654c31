// OTLP/HTTP through libcurl: one POST per export, protobuf or JSON body,
// optional gzip, TLS with the certificates of otlp_tls.h. The multi
// interface lets abort() wake a transfer in progress at once instead of
// waiting for curl's own timeout.
#include <curl/curl.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>

#include "common/unique_handle.h"
#include "output/otlp/otlp_tls.h"
#include "output/otlp/otlp_transport.h"

namespace funclatency {
namespace {

using OwnedEasy = UniqueHandle<CURL, curl_easy_cleanup>;
using OwnedMulti = UniqueHandle<CURLM, curl_multi_cleanup>;
using OwnedList = UniqueHandle<curl_slist, curl_slist_free_all>;

struct ResponseCapture {
  std::string body;
  std::string content_type;
  std::string retry_after;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* capture = static_cast<ResponseCapture*>(user);
  // The response is a small status message; cap it so a misbehaving server
  // cannot make us buffer without bound.
  if (capture->body.size() < (1u << 20)) capture->body.append(data, size * count);
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* capture = static_cast<ResponseCapture*>(user);
  std::string_view line(data, size * count);
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.remove_suffix(1);
    if (name == "retry-after") capture->retry_after = value;
    if (name == "content-type") capture->content_type = value;
  }
  return size * count;
}

class HttpTransport final : public OtlpTransport {
 public:
  HttpTransport(const OtlpOptions& options, OtlpTlsMaterial tls, CURLM* multi)
      : options_(options), tls_(std::move(tls)), multi_(multi) {}

  ExportOutcome send(const otlp_pb::ExportMetricsServiceRequest& request,
                     Clock::time_point deadline) override {
    auto body = encode(request);
    if (!body) return {ExportOutcome::Status::kPermanent, body.error().message()};

    OwnedEasy easy(curl_easy_init());
    if (!easy) return {ExportOutcome::Status::kRetryable, "curl_easy_init failed"};
    OwnedList headers;
    auto add_header = [&](const std::string& line) {
      headers.reset(curl_slist_append(headers.release(), line.c_str()));
    };
    bool json = options_.protocol == OtlpProtocol::kHttpJson;
    add_header(json ? "Content-Type: application/json" : "Content-Type: application/x-protobuf");
    if (options_.gzip) add_header("Content-Encoding: gzip");
    for (const auto& [key, value] : options_.headers) add_header(key + ": " + value);
    add_header("Expect:");  // no 100-continue round trip for larger bodies

    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (remaining.count() <= 0) return {ExportOutcome::Status::kRetryable, "no time left to send"};

    ResponseCapture capture;
    CURL* handle = easy.get();
    curl_easy_setopt(handle, CURLOPT_URL, options_.endpoint.c_str());
    curl_easy_setopt(handle, CURLOPT_POST, 1L);
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(handle, CURLOPT_USERAGENT, "funclatency/" FUNCLATENCY_VERSION);
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(remaining.count()));
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, &capture);
    curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(handle, CURLOPT_HEADERDATA, &capture);
    char curl_error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, curl_error);
    set_tls(handle);

    CURLcode result = CURLE_OK;
    bool finished = false;
    if (aborted_.load()) return {ExportOutcome::Status::kRetryable, "aborted at shutdown"};
    curl_multi_add_handle(multi_.get(), handle);
    while (!finished && !aborted_.load()) {
      int running = 0;
      curl_multi_perform(multi_.get(), &running);
      while (CURLMsg* message = curl_multi_info_read(multi_.get(), &running)) {
        if (message->msg == CURLMSG_DONE && message->easy_handle == handle) {
          result = message->data.result;
          finished = true;
        }
      }
      if (!finished) curl_multi_poll(multi_.get(), nullptr, 0, 200, nullptr);
    }
    curl_multi_remove_handle(multi_.get(), handle);
    if (!finished) return {ExportOutcome::Status::kRetryable, "aborted at shutdown"};
    std::string why = curl_error[0] ? curl_error : curl_easy_strerror(result);
    if (result == CURLE_PEER_FAILED_VERIFICATION) {
      // Retrying cannot make a certificate verify.
      return {ExportOutcome::Status::kPermanent,
              certificate_refused(options_.endpoint, options_.tls, why)};
    }
    if (result != CURLE_OK) {
      // Connection refused, DNS, TLS, timeouts: the collector may be back soon.
      return {ExportOutcome::Status::kRetryable, why};
    }
    long status = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
    ExportOutcome outcome;
    outcome.status = classify_http_status(status);
    outcome.detail = "HTTP " + std::to_string(status);
    if (outcome.status != ExportOutcome::Status::kSuccess) {
      if (!capture.retry_after.empty()) {
        outcome.retry_after =
            parse_retry_after(capture.retry_after, std::chrono::system_clock::now());
      }
      std::string excerpt = capture.body.substr(0, 200);
      if (!excerpt.empty() && excerpt.find('\0') == std::string::npos)
        outcome.detail += ": " + excerpt;
      return outcome;
    }
    read_partial_success(capture, outcome);
    return outcome;
  }

  void abort() override {
    aborted_.store(true);
    curl_multi_wakeup(multi_.get());
  }

 private:
  // The CAs and the client certificate, from memory: curl copies the blobs.
  void set_tls(CURL* handle) const {
    auto set_blob = [handle](CURLoption option, const std::string& pem) {
      curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(handle, option, &blob);
    };
    if (!tls_.ca_pem.empty()) set_blob(CURLOPT_CAINFO_BLOB, tls_.ca_pem);
    if (!tls_.client_cert_pem.empty()) {
      set_blob(CURLOPT_SSLCERT_BLOB, tls_.client_cert_pem);
      curl_easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM");
      set_blob(CURLOPT_SSLKEY_BLOB, tls_.client_key_pem);
      curl_easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM");
    }
  }

  Result<std::string> encode(const otlp_pb::ExportMetricsServiceRequest& request) const {
    std::string body;
    if (options_.protocol == OtlpProtocol::kHttpJson) {
      // OTLP/JSON: lowerCamelCase field names (protobuf's JSON names) and
      // enums as integers; 64-bit integers as strings are allowed.
      google::protobuf::util::JsonPrintOptions print;
      print.always_print_enums_as_ints = true;
      auto status = google::protobuf::util::MessageToJsonString(request, &body, print);
      if (!status.ok()) return runtime_error("encode OTLP/JSON: " + status.ToString());
    } else if (!request.SerializeToString(&body)) {
      return runtime_error("encode OTLP protobuf request");
    }
    if (options_.gzip) return gzip_compress(body);
    return body;
  }

  static void read_partial_success(const ResponseCapture& capture, ExportOutcome& outcome) {
    if (capture.body.empty()) return;
    otlp_pb::ExportMetricsServiceResponse response;
    bool parsed = false;
    if (capture.content_type.find("json") != std::string::npos) {
      google::protobuf::util::JsonParseOptions parse;
      parse.ignore_unknown_fields = true;
      parsed = google::protobuf::util::JsonStringToMessage(capture.body, &response, parse).ok();
    } else {
      parsed = response.ParseFromString(capture.body);
    }
    if (!parsed || !response.has_partial_success()) return;
    outcome.rejected_data_points = response.partial_success().rejected_data_points();
    outcome.partial_success_message = response.partial_success().error_message();
  }

  OtlpOptions options_;
  OtlpTlsMaterial tls_;
  OwnedMulti multi_;
  std::atomic<bool> aborted_{false};
};

}  // namespace

Result<std::unique_ptr<OtlpTransport>> make_http_transport(const OtlpOptions& options) {
  // curl_global_init is only safe before other threads use curl; doing it
  // once here, from main's thread, before the sender starts, keeps that.
  static std::once_flag curl_initialized;
  CURLcode init = CURLE_OK;
  std::call_once(curl_initialized, [&] { init = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init != CURLE_OK)
    return runtime_error(std::string("curl_global_init: ") + curl_easy_strerror(init));
  auto tls = load_otlp_tls(options.tls);
  if (!tls) return std::unexpected(tls.error());
  CURLM* multi = curl_multi_init();
  if (!multi) return runtime_error("curl_multi_init failed");
  return std::make_unique<HttpTransport>(options, std::move(*tls), multi);
}

}  // namespace funclatency
