// The head of an HTTP/1.x request (request line and header fields) parsed
// from the bytes a client has sent so far. Pure, so the endpoint's tests and
// fuzzer reach it without a socket; the server (http_server.cpp) decides
// what to do with an incomplete, oversized or malformed head.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace funclatency {

struct HttpRequest {
  std::string method;                                        // "GET"
  std::string target;                                        // "/metrics?x=1"
  std::string version;                                       // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // values trimmed
  size_t head_size = 0;       // bytes up to and including the blank line
  size_t content_length = 0;  // body bytes that follow the head
  std::string client;         // the client's address, without the port (set by the server)

  // The first value of a header field, matched without case; empty when absent.
  std::string_view header(std::string_view name) const;
  // The target without its query string.
  std::string_view path() const;
  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "keep-alive".
  bool keep_alive() const;
};

enum class HeadStatus {
  kIncomplete,  // no blank line yet, and still within the size limit
  kComplete,
  kRejected,  // answer `status` and close the connection
};

struct ParsedHead {
  HeadStatus status = HeadStatus::kIncomplete;
  HttpRequest request;  // when kComplete
  int http_status = 0;  // when kRejected: 400, 431 or 505
  std::string problem;  // when kRejected: why, for the response body
};

// `received` starts at the first byte of a request. A head longer than
// `max_head_bytes` is rejected with 431 as soon as that many bytes are seen
// without its end, so a client cannot make the server buffer more.
ParsedHead parse_request_head(std::string_view received, size_t max_head_bytes);

}  // namespace funclatency
