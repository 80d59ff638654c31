#include "output/otlp/otlp_transport.h"

#include <curl/curl.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace funclatency {

ExportOutcome::Status classify_http_status(long status) {
  if (status >= 200 && status < 300) return ExportOutcome::Status::kSuccess;
  switch (status) {
    case 429:
    case 502:
    case 503:
    case 504:
      return ExportOutcome::Status::kRetryable;
  }
  return ExportOutcome::Status::kPermanent;
}

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r' ||
                            value.back() == '\n')) {
    value.remove_suffix(1);
  }
  if (value.empty()) return std::nullopt;
  long long seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc() && end == value.data() + value.size()) {
    if (seconds < 0) return std::nullopt;
    return std::chrono::seconds(std::min<long long>(seconds, kMaxRetryAfter.count()));
  }
  // An HTTP date; curl_getdate parses the RFC 9110 forms.
  std::string text(value);
  time_t when = curl_getdate(text.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  // Far dates compared in seconds: as a time_point in ns they would overflow.
  if (when - std::chrono::system_clock::to_time_t(now) > kMaxRetryAfter.count()) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(kMaxRetryAfter);
  }
  auto delay = std::chrono::system_clock::from_time_t(when) - now;
  return std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(delay),
                    std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(kMaxRetryAfter));
}

Result<std::string> gzip_compress(std::string_view body) {
  z_stream stream{};
  // 15 window bits + 16: write a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return runtime_error("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, body.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  stream.avail_in = static_cast<uInt>(body.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) return runtime_error("gzip: deflate did not finish");
  return out;
}

std::chrono::milliseconds retry_delay(const OtlpRetryPolicy& policy, int failed_attempts,
                                      double random_unit,
                                      std::optional<std::chrono::milliseconds> retry_after) {
  double base = static_cast<double>(policy.initial_backoff.count()) *
                std::pow(policy.multiplier, std::max(0, failed_attempts - 1));
  base = std::min(base, static_cast<double>(policy.max_backoff.count()));
  auto delay = std::chrono::milliseconds(static_cast<int64_t>(base * (0.5 + random_unit)));
  if (retry_after && *retry_after > delay) delay = *retry_after;
  return delay;
}

Result<std::unique_ptr<OtlpTransport>> make_otlp_transport(const OtlpOptions& options) {
  if (options.protocol == OtlpProtocol::kGrpc) return make_grpc_transport(options);
  return make_http_transport(options);
}

}  // namespace funclatency
