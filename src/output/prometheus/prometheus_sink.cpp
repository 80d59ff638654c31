#include "output/prometheus/prometheus_sink.h"

#include <atomic>
#include <mutex>

#include "http/basic_auth.h"
#include "http/tls_server.h"
#include "output/prometheus/exposition.h"

namespace funclatency {

struct PrometheusSink::State {
  std::string metric_prefix;
  std::string host;
  bool tls = false;
  std::unique_ptr<HttpServer> server;
  std::atomic<HttpServer*> running = nullptr;  // for the auth worker's wake()

  std::mutex snapshot_mutex;
  std::shared_ptr<const MetricsSnapshot> snapshot = std::make_shared<MetricsSnapshot>();

  std::shared_ptr<const MetricsSnapshot> latest() {
    std::lock_guard lock(snapshot_mutex);
    return snapshot;
  }

  // Used on the server thread only. The latest snapshot's text in each
  // format, rendered once and shared by every answer that sends it.
  struct Rendered {
    std::shared_ptr<const MetricsSnapshot> snapshot;
    std::shared_ptr<const std::string> text;
  };
  Rendered rendered[2];
  std::unique_ptr<BasicAuth> auth;

  std::shared_ptr<const std::string> exposition(ExpositionFormat format) {
    Rendered& cached = rendered[format == ExpositionFormat::kOpenMetrics ? 1 : 0];
    auto current = latest();
    if (cached.snapshot != current) {
      cached.text =
          std::make_shared<const std::string>(render_exposition(*current, format, metric_prefix));
      cached.snapshot = std::move(current);
    }
    return cached.text;
  }

  HttpResponse answer(const HttpRequest& request) {
    switch (auth->check(request.header("Authorization"), request.client)) {
      case AuthVerdict::kAllowed:
        break;
      case AuthVerdict::kPending:
        return {0, {}, nullptr, {}};  // asked again once bcrypt is done
      case AuthVerdict::kBusy:
        return {503,
                "text/plain; charset=utf-8",
                std::make_shared<const std::string>("Too many logins under way\n"),
                {{"Retry-After", "1"}}};
      case AuthVerdict::kRefused:
        return {401,
                "text/plain; charset=utf-8",
                std::make_shared<const std::string>("Unauthorized\n"),
                {{"WWW-Authenticate", "Basic"}}};
    }
    if (request.path() == "/metrics") {
      ExpositionFormat format = negotiate_format(request.header("Accept"));
      return {200, std::string(content_type(format)), exposition(format), {}};
    }
    if (request.path() == "/") {
      return {200,
              "text/plain; charset=utf-8",
              std::make_shared<const std::string>("funclatency: metrics are at /metrics\n"),
              {}};
    }
    return {
        404, "text/plain; charset=utf-8", std::make_shared<const std::string>("Not Found\n"), {}};
  }
};

Result<std::unique_ptr<PrometheusSink>> PrometheusSink::serve(
    const ListenAddress& address, std::string metric_prefix, const WebConfig& web,
    HttpLimits limits, std::function<void(std::string_view)> log) {
  auto sink = listen(address, std::move(metric_prefix), web, limits, std::move(log));
  if (!sink) return std::unexpected(sink.error());
  if (auto started = (*sink)->start(); !started) return std::unexpected(started.error());
  return sink;
}

Result<void> PrometheusSink::start() {
  return state_->server->serve();
}

Result<std::unique_ptr<PrometheusSink>> PrometheusSink::listen(
    const ListenAddress& address, std::string metric_prefix, const WebConfig& web,
    HttpLimits limits, std::function<void(std::string_view)> log) {
  auto prefix = validate_metric_prefix(metric_prefix);
  if (!prefix) return std::unexpected(prefix.error());
  HttpServerOptions options;
  options.limits = limits;
  options.headers = web.headers;
  options.log = log;
  if (web.tls) {
    auto tls = TlsContextSource::create(*web.tls, std::move(log));
    if (!tls) return std::unexpected(tls.error());
    options.tls = std::move(*tls);
  }
  auto state = std::make_unique<State>();
  state->metric_prefix = *prefix;
  state->host = address.host;
  state->tls = web.tls.has_value();
  State* shared = state.get();
  state->auth = std::make_unique<BasicAuth>(web.basic_auth_users, [shared] {
    if (HttpServer* server = shared->running.load()) server->wake();
  });
  auto server =
      HttpServer::listen(address, "--prometheus", std::move(options),
                         [shared](const HttpRequest& request) { return shared->answer(request); });
  if (!server) return std::unexpected(server.error());
  state->server = std::move(*server);
  state->running = state->server.get();
  return std::unique_ptr<PrometheusSink>(new PrometheusSink(std::move(state)));
}

PrometheusSink::PrometheusSink(std::unique_ptr<State> state) : state_(std::move(state)) {}

PrometheusSink::~PrometheusSink() {
  close();
}

void PrometheusSink::write(const Report& report) {
  // Build outside the lock; the lock only guards a pointer swap.
  auto snapshot = std::make_shared<const MetricsSnapshot>(snapshot_of(report));
  std::lock_guard lock(state_->snapshot_mutex);
  state_->snapshot.swap(snapshot);
}

void PrometheusSink::close() {
  state_->server->stop();
}

uint16_t PrometheusSink::port() const {
  return state_->server->port();
}

std::string PrometheusSink::url() const {
  return std::string(state_->tls ? "https://" : "http://") +
         ListenAddress{state_->host, port()}.to_string() + "/metrics";
}

HttpServer::Counters PrometheusSink::counters() const {
  return state_->server->counters();
}

}  // namespace funclatency
