#include "output/prometheus/prometheus_sink.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#include "output/prometheus/exposition.h"

namespace funclatency {

namespace {

// Enough for a couple of scrapers (each keeps one connection alive) and a
// curl by hand, without a thread per core.
constexpr size_t kServerThreads = 4;

// The kernel's own verdict on the host name, so a typo reads as one.
Result<void> check_resolvable(const ListenAddress& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int status =
      getaddrinfo(address.host.c_str(), std::to_string(address.port).c_str(), &hints, &found);
  if (status != 0) {
    return bad_input(
        "--prometheus: cannot resolve \"" + address.host + "\": " + gai_strerror(status),
        "give a local IP address such as 127.0.0.1 or 0.0.0.0");
  }
  freeaddrinfo(found);
  return {};
}

}  // namespace

struct PrometheusSink::State {
  std::string metric_prefix;
  std::string host;
  uint16_t port = 0;
  httplib::Server server;
  std::thread server_thread;
  std::atomic<bool> listen_returned = false;

  std::mutex snapshot_mutex;
  std::shared_ptr<const MetricsSnapshot> snapshot = std::make_shared<MetricsSnapshot>();

  std::shared_ptr<const MetricsSnapshot> latest() {
    std::lock_guard lock(snapshot_mutex);
    return snapshot;
  }
};

Result<std::unique_ptr<PrometheusSink>> PrometheusSink::start(const ListenAddress& address,
                                                              std::string metric_prefix) {
  auto prefix = validate_metric_prefix(metric_prefix);
  if (!prefix) return std::unexpected(prefix.error());
  if (auto resolved = check_resolvable(address); !resolved) {
    return std::unexpected(resolved.error());
  }

  auto state = std::make_unique<State>();
  state->metric_prefix = *prefix;
  state->host = address.host;
  State* shared = state.get();

  httplib::Server& server = state->server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  // One request per connection: an idle kept-alive connection would hold a
  // worker, and close() waits for the workers. Scrapes come seconds apart,
  // so a connection per scrape costs nothing.
  server.set_keep_alive_max_count(1);
  // httplib's default also sets SO_REUSEPORT, which would let a second
  // funclatency share the port silently. SO_REUSEADDR alone still refuses a
  // port someone listens on, while allowing a restart over TIME_WAIT.
  server.set_socket_options([](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.Get("/metrics", [shared](const httplib::Request& request, httplib::Response& response) {
    ExpositionFormat format = negotiate_format(request.get_header_value("Accept"));
    response.set_content(render_exposition(*shared->latest(), format, shared->metric_prefix),
                         std::string(content_type(format)).c_str());
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("funclatency: metrics are at /metrics\n", "text/plain; charset=utf-8");
  });

  errno = 0;
  bool bound = false;
  if (address.port == 0) {
    int port = server.bind_to_any_port(address.host);
    bound = port > 0;
    state->port = bound ? static_cast<uint16_t>(port) : 0;
  } else {
    bound = server.bind_to_port(address.host, address.port);
    state->port = address.port;
  }
  if (!bound) {
    // httplib does not return the reason; errno still holds bind()'s.
    int reason = errno;
    std::string hint = reason == EADDRINUSE ? "another process listens there; pick another port"
                       : reason == EADDRNOTAVAIL
                           ? "the address is not one of this host's; try 127.0.0.1 or 0.0.0.0"
                       : reason == EACCES ? "ports below 1024 need CAP_NET_BIND_SERVICE"
                                          : "";
    return bad_input("--prometheus: cannot listen on " + address.to_string(), hint, reason);
  }

  try {
    state->server_thread = std::thread([shared] {
      shared->server.listen_after_bind();
      shared->listen_returned = true;
    });
  } catch (const std::system_error& failure) {
    return runtime_error("start the Prometheus server thread", failure.code().value());
  }
  // stop() is a no-op until the listen loop runs (its first step), so wait
  // for it: close() must never leave the thread listening forever.
  while (!server.is_running() && !shared->listen_returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server.is_running()) {
    state->server_thread.join();
    return runtime_error("serve Prometheus scrapes on " + address.to_string());
  }
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
  if (!state_->server_thread.joinable()) return;
  state_->server.stop();
  state_->server_thread.join();
}

uint16_t PrometheusSink::port() const {
  return state_->port;
}

std::string PrometheusSink::url() const {
  return "http://" + ListenAddress{state_->host, state_->port}.to_string() + "/metrics";
}

}  // namespace funclatency
