// Serves GET /metrics for Prometheus scrapers while tracing runs. The server
// (http_server.h) owns its one thread; write() only swaps in the newest
// snapshot, so a slow scraper never holds up the collector. A web-config adds
// TLS, basic authentication and response headers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "http/http_server.h"
#include "http/listen_address.h"
#include "http/web_config.h"
#include "model/sink.h"

namespace funclatency {

class PrometheusSink : public Sink {
 public:
  // Binds before returning, so a port in use or an address that cannot be
  // bound is a kBadInput error while nothing is attached yet; but reads no
  // request, runs no TLS handshake and no bcrypt until start(), which
  // funclatency calls once its privileges are dropped. Until the first
  // write() the endpoint serves the metadata with no series. A certificate or
  // key that cannot be read or used is kBadInput too. `log` hears, one line
  // each, what the server thread cannot tell a client (HttpServerOptions::log).
  static Result<std::unique_ptr<PrometheusSink>> listen(
      const ListenAddress& address, std::string metric_prefix, const WebConfig& web = {},
      HttpLimits limits = {}, std::function<void(std::string_view)> log = {});
  // listen(), then start().
  static Result<std::unique_ptr<PrometheusSink>> serve(
      const ListenAddress& address, std::string metric_prefix, const WebConfig& web = {},
      HttpLimits limits = {}, std::function<void(std::string_view)> log = {});
  ~PrometheusSink() override;

  // Begins serving: accepting, reading requests, handshakes, bcrypt.
  Result<void> start() override;

  // Keeps FunctionReport::total and total_lost of every function; interval
  // and total reports both carry them.
  void write(const Report& report) override;
  // Stops the server after in-flight scrapes finish. Idempotent.
  void close() override;

  uint16_t port() const;    // the bound port, also when 0 was asked for
  std::string url() const;  // http(s)://HOST:PORT/metrics
  HttpServer::Counters counters() const;

  struct State;  // the server and the latest snapshot, shared with its handlers

 private:
  explicit PrometheusSink(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace funclatency
