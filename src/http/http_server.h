// The HTTP/1.1 server under the /metrics endpoint (docs/ARCHITECTURE.md,
// "The HTTP server"): one thread and one poll loop, written here because
// cpp-httplib (a thread per connection from a fixed pool, a read timeout
// that restarts with every byte, an unbounded accept queue) lets four
// half-open requests starve every scrape, and no Debian package offers a
// server with whole-request deadlines and eviction of idle connections.
// Every connection is non-blocking and bounded: a deadline for the whole
// request, for writing the answer and for idling between kept-alive
// requests; a cap on the head and body size; a cap on open connections
// that, when reached, drops the connection doing the least (idle ones
// first, oldest first). With a TLS context, every connection speaks TLS.
// The thread holds no capability, permitted or effective, whatever the
// thread that started it keeps.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "http/http_request.h"
#include "http/listen_address.h"

namespace funclatency {

class TlsContextSource;

struct HttpLimits {
  std::chrono::milliseconds request_timeout{10'000};  // first byte (or accept) to the whole request
  std::chrono::milliseconds write_timeout{10'000};    // the whole answer written
  std::chrono::milliseconds idle_timeout{60'000};     // kept alive, waiting for the next request
  size_t max_head_bytes = 16 * 1024;                  // request line + header fields
  size_t max_body_bytes = 64 * 1024;                  // read and discarded
  size_t max_connections = 128;
  int listen_backlog = 1024;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::shared_ptr<const std::string> body;  // shared: many slow readers hold one copy
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpServerOptions {
  HttpLimits limits;
  // Sent with every answer, the server's own error answers included.
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<TlsContextSource> tls;  // null: plain HTTP
  // Hears what goes wrong on the server thread that no client is told (a
  // failed poll, a certificate rotation that cannot be used): once each.
  std::function<void(std::string_view)> log;
};

// Called on the server thread for each complete request. An answer with
// status 0 means "not yet": the connection waits (within its request
// deadline) and the handler is asked again after wake() or shortly.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  // Binds and listens before returning (an address that cannot be bound is
  // kBadInput, named as `option` names it), but reads nothing: clients wait
  // in the kernel's backlog until serve().
  static Result<std::unique_ptr<HttpServer>> listen(const ListenAddress& address,
                                                    std::string_view option,
                                                    HttpServerOptions options, HttpHandler handler);
  // listen(), then serve().
  static Result<std::unique_ptr<HttpServer>> start(const ListenAddress& address,
                                                   std::string_view option,
                                                   HttpServerOptions options, HttpHandler handler);
  // Starts the thread that accepts and answers. Once; later calls do nothing.
  Result<void> serve();
  ~HttpServer();
  // Closes every connection and joins the thread. Idempotent.
  void stop();
  // Asks the handler again about the requests it put off. Any thread.
  void wake();
  uint16_t port() const;

  struct Counters {
    uint64_t accepted = 0, evicted = 0, timed_out = 0, rejected = 0, answered = 0;
  };
  Counters counters() const;

  struct Loop;  // the poll loop's state, on its thread

 private:
  explicit HttpServer(std::unique_ptr<Loop> loop);
  std::unique_ptr<Loop> loop_;
};

// The standard reason phrase of the status codes the server sends.
std::string_view reason_phrase(int status);

}  // namespace funclatency
