// One thread polls the listening socket and every connection; nothing a
// client does blocks it, and every connection has a deadline, so a scrape is
// answered whatever the other clients do (see http_server.h for the bounds).
#include "http/http_server.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include "common/names_table.h"
#include "common/thread_capabilities.h"
#include "common/unique_fd.h"
#include "http/tls_server.h"

namespace funclatency {

namespace {

using Clock = std::chrono::steady_clock;

// Reads per readable event before other connections get their turn.
constexpr size_t kReadChunk = 16 * 1024;
constexpr int kReadsPerTurn = 4;
// Answers per turn to one connection's pipelined requests: the rest waits for
// the next turn, so 10,000 requests in one write cannot hold a scrape on
// another connection for longer than these few answers take.
constexpr int kAnswersPerTurn = 16;
// Received, not yet answered: beyond this, a connection is not read from
// until its pipelined requests are answered (the kernel's buffers hold the rest).
constexpr size_t kMaxPendingInput = kReadChunk * kReadsPerTurn;
// Accepts per loop turn, so established connections are served in between.
constexpr int kAcceptsPerTurn = 64;
// How often put-off requests are asked about again without a wake().
constexpr std::chrono::milliseconds kDeferredRetry{50};
// Out of descriptors with no connection to give up: how long the listener
// rests before accept is tried again.
constexpr std::chrono::milliseconds kDescriptorPause{100};
// After poll() itself failed (ENOMEM, say): how long before it is tried again.
constexpr std::chrono::milliseconds kPollFailurePause{100};

enum class Phase {
  kHandshake,  // TLS handshake under way
  kIdle,       // waiting for a request, no byte of it received
  kHead,       // part of a request head received
  kBody,       // discarding the body of a request whose head was complete
  kDeferred,   // the handler put the answer off (status 0)
  kWriting,    // sending the answer
};

enum class Io { kProgress, kBlocked, kClosed };

struct Connection {
  UniqueFd fd;
  std::shared_ptr<TlsServerContext> tls;  // what `ssl` was made from; outlives it
  OwnedSsl ssl;
  Phase phase = Phase::kIdle;
  Clock::time_point since;     // the phase's start: the oldest goes first when full
  Clock::time_point deadline;  // closed when it passes
  bool received_any = false;   // has sent a byte in this phase (TLS: stepped the handshake)
  bool answered_any = false;   // has been sent an answer: a client, not a mere connection
  bool want_write = false;     // the socket must become writable to go on (TLS may ask)
  bool closed = false;
  bool backlog = false;      // whole requests left in `in` when its turn ended
  bool peer_closed = false;  // the client sent its last byte (read gave end of file)
  std::string client;        // the peer's address, numeric, without the port
  std::string in;            // received, not yet consumed
  HttpRequest request;
  size_t body_left = 0;
  std::string out_head;
  std::shared_ptr<const std::string> out_body;
  size_t written = 0;
  bool close_after = false;
};

std::string format_head(const HttpResponse& response, size_t body_size, bool close,
                        const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " ";
  head += reason_phrase(response.status);
  head += "\r\nContent-Type: " + response.content_type;
  head += "\r\nContent-Length: " + std::to_string(body_size);
  for (const auto& [name, value] : extra) head += "\r\n" + name + ": " + value;
  for (const auto& [name, value] : response.headers) head += "\r\n" + name + ": " + value;
  head += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  return head;
}

// The kernel's verdict on the address, then a socket bound and listening.
Result<UniqueFd> listen_on(const ListenAddress& address, std::string_view option, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int status =
      getaddrinfo(address.host.c_str(), std::to_string(address.port).c_str(), &hints, &found);
  if (status != 0) {
    return bad_input(
        std::string(option) + ": cannot resolve \"" + address.host + "\": " + gai_strerror(status),
        "give a local IP address such as 127.0.0.1 or 0.0.0.0");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, &freeaddrinfo);
  int reason = 0;
  for (addrinfo* candidate = found; candidate; candidate = candidate->ai_next) {
    UniqueFd fd(socket(candidate->ai_family, candidate->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       candidate->ai_protocol));
    if (!fd) {
      reason = errno;
      continue;
    }
    // SO_REUSEADDR alone (no SO_REUSEPORT) still refuses a port another
    // process listens on, while allowing a restart over TIME_WAIT.
    int yes = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd.get(), candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        listen(fd.get(), backlog) == 0) {
      return fd;
    }
    reason = errno;
  }
  std::string hint = reason == EADDRINUSE ? "another process listens there; pick another port"
                     : reason == EADDRNOTAVAIL
                         ? "the address is not one of this host's; try 127.0.0.1 or 0.0.0.0"
                     : reason == EACCES ? "ports below 1024 need CAP_NET_BIND_SERVICE"
                                        : "";
  return bad_input(std::string(option) + ": cannot listen on " + address.to_string(), hint, reason);
}

// The peer's address as text ("127.0.0.1", "::1"); empty when unknown.
std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  char host[NI_MAXHOST];
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return {};
  }
  return host;
}

uint16_t bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

// What an SSL_accept, SSL_read or SSL_write that did not succeed (`result`)
// means: blocked until the socket is readable (or writable, which TLS may
// ask for), or the connection is over.
Io ssl_failure(Connection& connection, int result) {
  const int error = SSL_get_error(connection.ssl.get(), result);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    connection.want_write = error == SSL_ERROR_WANT_WRITE;
    return Io::kBlocked;
  }
  ERR_clear_error();
  return Io::kClosed;
}

}  // namespace

namespace {
constexpr NamedValue<int> kReasonPhrases[] = {{200, "OK"},
                                              {400, "Bad Request"},
                                              {401, "Unauthorized"},
                                              {404, "Not Found"},
                                              {405, "Method Not Allowed"},
                                              {408, "Request Timeout"},
                                              {413, "Content Too Large"},
                                              {431, "Request Header Fields Too Large"},
                                              {500, "Internal Server Error"},
                                              {501, "Not Implemented"},
                                              {503, "Service Unavailable"},
                                              {505, "HTTP Version Not Supported"}};
}  // namespace

std::string_view reason_phrase(int status) {
  return name_in(kReasonPhrases, status, "Unknown");
}

struct HttpServer::Loop {
  HttpServerOptions options;
  HttpHandler handler;
  UniqueFd listener;
  UniqueFd wake;     // an eventfd: stop() writes it
  UniqueFd reserve;  // /dev/null, held to be closed when accept runs out of descriptors
  Clock::time_point listener_rests_until;  // out of descriptors: not polled before
  uint16_t port = 0;
  std::vector<std::unique_ptr<Connection>> connections;
  std::atomic<bool> stopping = false;
  std::atomic<bool> finished = false;  // run() is past its last use of the connections
  std::atomic<uint64_t> accepted = 0, evicted = 0, timed_out = 0, rejected = 0, answered = 0;
  // Last: joined first when the Loop goes, before anything run() reads.
  std::jthread thread;

  void run();
  void accept_some(Clock::time_point now);
  bool make_room(Clock::time_point now);
  void evict_one();
  void service(Connection& connection, short revents, Clock::time_point now);
  void close_if_done(Connection& connection);
  void expire(Clock::time_point now);
  int poll_timeout(Clock::time_point now) const;

  Io handshake(Connection& connection);
  Io read_some(Connection& connection, Clock::time_point now);
  Io write_some(Connection& connection);
  void process_input(Connection& connection, Clock::time_point now);
  void answer(Connection& connection, Clock::time_point now);
  void retry_deferred(Clock::time_point now);
  void respond(Connection& connection, HttpResponse response, bool close, bool head_only,
               Clock::time_point now);
  void reject(Connection& connection, int status, std::string_view problem, Clock::time_point now);
  void finish_write(Connection& connection, Clock::time_point now);
  void enter(Connection& connection, Phase phase, Clock::time_point deadline,
             Clock::time_point now);
};

void HttpServer::Loop::enter(Connection& connection, Phase phase, Clock::time_point deadline,
                             Clock::time_point now) {
  connection.phase = phase;
  connection.since = now;
  connection.deadline = deadline;
  connection.received_any = false;
}

void HttpServer::Loop::run() {
  pthread_setname_np(pthread_self(), "fl-http");  // found by name in /proc/PID/task
  if (int failed = drop_thread_capabilities(); failed != 0 && options.log) {
    options.log("the /metrics server thread could not drop its capabilities: " +
                std::string(std::strerror(failed)));
  }
  bool poll_failed_before = false;
  std::vector<pollfd> fds;
  while (!stopping) {
    Clock::time_point now = Clock::now();
    expire(now);
    fds.clear();
    fds.push_back({wake.get(), POLLIN, 0});
    // A negative descriptor is not polled: the listener rests.
    fds.push_back({now < listener_rests_until ? -1 : listener.get(), POLLIN, 0});
    for (const auto& connection : connections) {
      short events = connection->phase == Phase::kWriting ? POLLOUT : POLLIN;
      if (connection->ssl) events = connection->want_write ? POLLOUT : POLLIN;
      if (connection->phase == Phase::kDeferred) events = 0;  // errors only
      fds.push_back({connection->fd.get(), events, 0});
    }
    int ready = poll(fds.data(), fds.size(), poll_timeout(now));
    if (ready < 0 && errno != EINTR) {
      // Said once; the loop goes on after a pause, so a passing shortage
      // (ENOMEM) costs one pause, and a lasting one neither spins nor
      // ends the endpoint without a word.
      int reason = errno;
      if (!poll_failed_before && options.log) {
        options.log("the /metrics server's poll() failed with " + std::to_string(fds.size()) +
                    " descriptors: " + std::strerror(reason) + "; retrying every " +
                    std::to_string(kPollFailurePause.count()) + " ms, said once (" +
                    (reason == EINVAL ? "more descriptors than the open-file limit allows: "
                                        "raise ulimit -n"
                                      : "short of memory?") +
                    ")");
      }
      poll_failed_before = true;
      uint64_t count = 0;
      pollfd wake_only{wake.get(), POLLIN, 0};
      if (::poll(&wake_only, 1, static_cast<int>(kPollFailurePause.count())) > 0) {
        [[maybe_unused]] auto drained = read(wake.get(), &count, sizeof count);
      }
      continue;
    }
    if (stopping) break;
    now = Clock::now();
    if (ready > 0 && fds[0].revents) {
      uint64_t count = 0;
      [[maybe_unused]] auto drained = read(wake.get(), &count, sizeof count);
    }
    // Connections first, by index: accepting appends to the vector. One with
    // requests left from its last turn goes on whether or not it is ready.
    size_t polled = connections.size();
    for (size_t i = 0; i < polled; i++) {
      if (ready > 0 && fds[i + 2].revents) {
        service(*connections[i], fds[i + 2].revents, now);
      } else if (connections[i]->backlog) {
        process_input(*connections[i], now);
        close_if_done(*connections[i]);
      }
    }
    std::erase_if(connections, [](const auto& connection) { return connection->closed; });
    if (ready > 0 && (fds[1].revents & POLLIN)) accept_some(now);
    retry_deferred(now);
  }
  connections.clear();
  finished = true;
  finished.notify_all();
}

int HttpServer::Loop::poll_timeout(Clock::time_point now) const {
  auto soonest = now + std::chrono::seconds(1);
  if (now < listener_rests_until) soonest = std::min(soonest, listener_rests_until);
  for (const auto& connection : connections) {
    if (connection->backlog) return 0;  // requests waiting for their turn
    soonest = std::min(soonest, connection->deadline);
    if (connection->phase == Phase::kDeferred) soonest = std::min(soonest, now + kDeferredRetry);
  }
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(soonest - now).count();
  return static_cast<int>(std::clamp<int64_t>(wait, 0, 1000));
}

void HttpServer::Loop::expire(Clock::time_point now) {
  for (auto& connection : connections) {
    if (connection->deadline > now) continue;
    timed_out++;
    if (!connection->ssl && connection->phase == Phase::kHead) {
      // Best effort: the client learns why, if its socket has room.
      std::string answer =
          format_head({408, "text/plain; charset=utf-8", nullptr, {}}, 0, true, options.headers);
      [[maybe_unused]] auto sent =
          send(connection->fd.get(), answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    connection->closed = true;
  }
  std::erase_if(connections, [](const auto& connection) { return connection->closed; });
}

// Full: the connection doing the least goes. Idle kept-alive ones first, then
// those that have sent nothing, then half-sent requests, then slow readers;
// the oldest first within each.
void HttpServer::Loop::evict_one() {
  auto rank = [](const Connection& connection) {
    switch (connection.phase) {
      case Phase::kIdle:
        return connection.received_any ? 2 : 0;
      case Phase::kHandshake:
        return connection.received_any ? 2 : 1;
      case Phase::kHead:
      case Phase::kBody:
      case Phase::kDeferred:
        return 2;
      case Phase::kWriting:
        return 3;
    }
    return 3;
  };
  auto victim =
      std::min_element(connections.begin(), connections.end(), [&](const auto& a, const auto& b) {
        int rank_a = rank(*a), rank_b = rank(*b);
        if (rank_a != rank_b) return rank_a < rank_b;
        return a->since < b->since;
      });
  if (victim == connections.end()) return;
  evicted++;
  connections.erase(victim);
}

void HttpServer::Loop::accept_some(Clock::time_point now) {
  for (int i = 0; i < kAcceptsPerTurn && !stopping; i++) {
    UniqueFd fd(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd && (errno == EMFILE || errno == ENFILE) && make_room(now)) {
      fd.reset(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    }
    if (!fd) return;  // EAGAIN, or still out of descriptors: the rest wait in the backlog
    accepted++;
    if (connections.size() >= options.limits.max_connections) evict_one();
    auto connection = std::make_unique<Connection>();
    // The head and the body go out in two writes (two TLS records): with
    // Nagle's algorithm the second waits for the client's delayed ACK, 40 ms
    // on every answer of a kept-alive connection, as Prometheus keeps them.
    int yes = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    connection->client = peer_address(fd.get());
    connection->fd = std::move(fd);
    Phase phase = Phase::kIdle;
    if (options.tls) {
      connection->tls = options.tls->current();  // a rotated certificate from now on
      connection->ssl.reset(SSL_new(connection->tls->native()));
      if (!connection->ssl || SSL_set_fd(connection->ssl.get(), connection->fd.get()) != 1) {
        ERR_clear_error();
        continue;
      }
      SSL_set_mode(connection->ssl.get(),
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      phase = Phase::kHandshake;
    }
    enter(*connection, phase, now + options.limits.request_timeout, now);
    connections.push_back(std::move(connection));
    // A scraper sends its request right after connecting: read it now, so
    // it is no longer a connection that has sent nothing.
    service(*connections.back(), POLLIN, now);
    if (connections.back()->closed) connections.pop_back();
  }
}

// Out of descriptors (EMFILE, ENFILE): accept fails while the listener stays
// readable, so polling it again at once would spin. The oldest connection
// that has neither sent a byte nor been answered gives its descriptor to the
// next client (true: accept again); clients that were answered or are
// sending keep theirs. With none to give, the reserve descriptor lets the
// waiting client be accepted and closed, so it learns at once, and the
// listener rests for kDescriptorPause; the connections held are served all
// the while.
bool HttpServer::Loop::make_room(Clock::time_point now) {
  auto silent = connections.end();
  for (auto it = connections.begin(); it != connections.end(); ++it) {
    const Connection& connection = **it;
    bool idle = connection.phase == Phase::kIdle || connection.phase == Phase::kHandshake;
    if (!idle || connection.received_any || connection.answered_any) continue;
    if (silent == connections.end() || connection.since < (*silent)->since) silent = it;
  }
  if (silent != connections.end()) {
    evicted++;
    connections.erase(silent);
    return true;
  }
  if (reserve) {
    reserve.reset();
    UniqueFd refused(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (refused) rejected++;
    refused.reset();
    reserve.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  listener_rests_until = now + kDescriptorPause;
  return false;
}

void HttpServer::Loop::service(Connection& connection, short revents, Clock::time_point now) {
  if ((revents & (POLLERR | POLLNVAL)) && !(revents & POLLIN)) {
    connection.closed = true;
    return;
  }
  if (connection.phase == Phase::kHandshake) {
    Io step = handshake(connection);
    if (step == Io::kClosed) {
      connection.closed = true;
      return;
    }
    if (step == Io::kBlocked) return;
    enter(connection, Phase::kIdle, now + options.limits.request_timeout, now);
    connection.received_any = true;
  }
  if (connection.phase == Phase::kWriting) {
    if (write_some(connection) == Io::kClosed) {
      connection.closed = true;
      return;
    }
    if (connection.phase == Phase::kWriting) return;
    finish_write(connection, now);
    if (connection.closed) return;
  }
  if (read_some(connection, now) == Io::kClosed) connection.peer_closed = true;
  process_input(connection, now);
  close_if_done(connection);
}

// A client gone for good is let go once what it asked before it went is answered.
void HttpServer::Loop::close_if_done(Connection& connection) {
  if (connection.peer_closed && !connection.backlog && connection.phase != Phase::kWriting) {
    connection.closed = true;
  }
}

Io HttpServer::Loop::handshake(Connection& connection) {
  // A client that has sent no byte of its handshake ranks as silent.
  char byte;
  if (recv(connection.fd.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
    connection.received_any = true;
  }
  ERR_clear_error();
  int done = SSL_accept(connection.ssl.get());
  if (done == 1) {
    connection.want_write = false;
    return Io::kProgress;
  }
  const Io io = ssl_failure(connection, done);
  if (io == Io::kClosed) rejected++;
  return io;
}

Io HttpServer::Loop::read_some(Connection& connection, Clock::time_point now) {
  if (connection.phase == Phase::kWriting || connection.phase == Phase::kDeferred) {
    return Io::kBlocked;
  }
  char buffer[kReadChunk];
  for (int round = 0; round < kReadsPerTurn && connection.in.size() < kMaxPendingInput; round++) {
    ssize_t got = 0;
    if (connection.ssl) {
      ERR_clear_error();
      int n = SSL_read(connection.ssl.get(), buffer, sizeof buffer);
      if (n <= 0) return ssl_failure(connection, n);
      connection.want_write = false;
      got = n;
    } else {
      got = recv(connection.fd.get(), buffer, sizeof buffer, 0);
      if (got < 0) return errno == EAGAIN || errno == EINTR ? Io::kBlocked : Io::kClosed;
      if (got == 0) return Io::kClosed;
    }
    if (connection.phase == Phase::kIdle && connection.in.empty()) {
      // The request's own deadline runs from its first byte.
      enter(connection, Phase::kHead, now + options.limits.request_timeout, now);
    }
    connection.received_any = true;
    connection.in.append(buffer, static_cast<size_t>(got));
    // Stop reading once the head cannot fit anyway; process_input says 431.
    if (connection.phase != Phase::kBody && connection.in.size() > options.limits.max_head_bytes) {
      return Io::kProgress;
    }
  }
  return Io::kProgress;
}

void HttpServer::Loop::process_input(Connection& connection, Clock::time_point now) {
  connection.backlog = false;
  int answers = 0;
  while (!connection.closed && connection.phase != Phase::kWriting &&
         connection.phase != Phase::kDeferred) {
    if (connection.phase == Phase::kBody) {
      size_t discard = std::min(connection.body_left, connection.in.size());
      connection.body_left -= discard;
      connection.in.erase(0, discard);
      if (connection.body_left > 0) return;
      answer(connection, now);
      if (++answers == kAnswersPerTurn && !connection.in.empty()) {
        connection.backlog = true;  // the next turn goes on, after the others
        return;
      }
      continue;
    }
    if (connection.in.empty()) return;
    ParsedHead parsed = parse_request_head(connection.in, options.limits.max_head_bytes);
    if (parsed.status == HeadStatus::kIncomplete) {
      if (connection.phase == Phase::kIdle) {
        enter(connection, Phase::kHead, now + options.limits.request_timeout, now);
      }
      return;
    }
    if (parsed.status == HeadStatus::kRejected) {
      reject(connection, parsed.http_status, parsed.problem, now);
      return;
    }
    if (parsed.request.content_length > options.limits.max_body_bytes) {
      reject(connection, 413, "request body too large", now);
      return;
    }
    connection.in.erase(0, parsed.request.head_size);
    connection.body_left = parsed.request.content_length;
    connection.request = std::move(parsed.request);
    connection.request.client = connection.client;
    connection.phase = Phase::kBody;
  }
}

// The request in `connection` is whole: the handler's answer, or a wait.
void HttpServer::Loop::answer(Connection& connection, Clock::time_point now) {
  const HttpRequest& request = connection.request;
  HttpResponse response;
  if (request.method != "GET" && request.method != "HEAD") {
    response = {405,
                "text/plain; charset=utf-8",
                std::make_shared<const std::string>("Method Not Allowed\n"),
                {{"Allow", "GET, HEAD"}}};
  } else {
    try {
      response = handler(request);
    } catch (const std::exception&) {
      // What failed stays here: its text may describe this host.
      response = {500,
                  "text/plain; charset=utf-8",
                  std::make_shared<const std::string>("Internal Server Error\n"),
                  {}};
    }
  }
  if (response.status == 0) {
    connection.phase = Phase::kDeferred;  // the deadline stays the request's
    return;
  }
  respond(connection, std::move(response), !request.keep_alive(), request.method == "HEAD", now);
}

void HttpServer::Loop::retry_deferred(Clock::time_point now) {
  for (auto& connection : connections) {
    if (connection->phase != Phase::kDeferred) continue;
    connection->phase = Phase::kBody;  // whole, body discarded: ask again
    answer(*connection, now);
    if (!connection->closed && connection->phase != Phase::kDeferred) {
      process_input(*connection, now);
    }
  }
  std::erase_if(connections, [](const auto& connection) { return connection->closed; });
}

void HttpServer::Loop::reject(Connection& connection, int status, std::string_view problem,
                              Clock::time_point now) {
  rejected++;
  connection.in.clear();
  respond(connection,
          {status,
           "text/plain; charset=utf-8",
           std::make_shared<const std::string>(std::string(problem) + "\n"),
           {}},
          true, false, now);
}

void HttpServer::Loop::respond(Connection& connection, HttpResponse response, bool close,
                               bool head_only, Clock::time_point now) {
  if (!response.body) response.body = std::make_shared<const std::string>();
  connection.out_head = format_head(response, response.body->size(), close, options.headers);
  connection.out_body = head_only ? nullptr : std::move(response.body);
  connection.written = 0;
  connection.close_after = close;
  enter(connection, Phase::kWriting, now + options.limits.write_timeout, now);
  if (write_some(connection) == Io::kClosed) {
    connection.closed = true;
    return;
  }
  if (connection.phase != Phase::kWriting) finish_write(connection, now);
}

Io HttpServer::Loop::write_some(Connection& connection) {
  size_t body_size = connection.out_body ? connection.out_body->size() : 0;
  size_t total = connection.out_head.size() + body_size;
  while (connection.written < total) {
    const char* data;
    size_t length;
    if (connection.written < connection.out_head.size()) {
      data = connection.out_head.data() + connection.written;
      length = connection.out_head.size() - connection.written;
    } else {
      size_t offset = connection.written - connection.out_head.size();
      data = connection.out_body->data() + offset;
      length = body_size - offset;
    }
    ssize_t sent = 0;
    if (connection.ssl) {
      ERR_clear_error();
      int n = SSL_write(connection.ssl.get(), data,
                        static_cast<int>(std::min<size_t>(length, INT_MAX)));
      if (n <= 0) return ssl_failure(connection, n);
      sent = n;
    } else {
      sent = send(connection.fd.get(), data, length, MSG_NOSIGNAL);
      if (sent < 0) return errno == EAGAIN || errno == EINTR ? Io::kBlocked : Io::kClosed;
    }
    connection.written += static_cast<size_t>(sent);
  }
  connection.want_write = false;
  connection.out_body.reset();
  connection.out_head.clear();
  answered++;
  connection.answered_any = true;
  connection.phase = Phase::kIdle;  // finish_write picks the next phase
  return Io::kProgress;
}

void HttpServer::Loop::finish_write(Connection& connection, Clock::time_point now) {
  if (connection.close_after) {
    if (connection.ssl) SSL_shutdown(connection.ssl.get());  // best effort close_notify
    shutdown(connection.fd.get(), SHUT_WR);
    connection.closed = true;
    return;
  }
  // A pipelined request may already be here: the caller's loop reads it
  // (process_input), so a client's pipeline never deepens the stack.
  enter(connection, Phase::kIdle, now + options.limits.idle_timeout, now);
}

Result<std::unique_ptr<HttpServer>> HttpServer::listen(const ListenAddress& address,
                                                       std::string_view option,
                                                       HttpServerOptions options,
                                                       HttpHandler handler) {
  auto listener = listen_on(address, option, options.limits.listen_backlog);
  if (!listener) return std::unexpected(listener.error());
  auto loop = std::make_unique<Loop>();
  loop->options = std::move(options);
  loop->handler = std::move(handler);
  loop->listener = std::move(*listener);
  loop->port = bound_port(loop->listener.get());
  loop->wake.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!loop->wake) return runtime_error("create the HTTP server's wake-up eventfd", errno);
  loop->reserve.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!loop->reserve) {
    return runtime_error("open /dev/null as the HTTP server's reserve descriptor", errno,
                         "raise the open-file limit (ulimit -n)");
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(loop)));
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const ListenAddress& address,
                                                      std::string_view option,
                                                      HttpServerOptions options,
                                                      HttpHandler handler) {
  auto server = listen(address, option, std::move(options), std::move(handler));
  if (!server) return std::unexpected(server.error());
  if (auto serving = (*server)->serve(); !serving) return std::unexpected(serving.error());
  return server;
}

Result<void> HttpServer::serve() {
  if (loop_->thread.joinable() || loop_->stopping) return {};
  try {
    loop_->thread = std::jthread([state = loop_.get()] { state->run(); });
  } catch (const std::system_error& failure) {
    return runtime_error("start the HTTP server thread", failure.code().value());
  }
  return {};
}

HttpServer::HttpServer(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::stop() {
  loop_->stopping = true;  // also when never served: serve() will not start it
  if (!loop_->thread.joinable()) return;
  wake();
  // Every connection is closed once run() says so; the thread itself ends
  // right after and is joined with the Loop.
  loop_->finished.wait(false);
  loop_->listener.reset();
}

void HttpServer::wake() {
  uint64_t one = 1;
  [[maybe_unused]] auto written = write(loop_->wake.get(), &one, sizeof one);
}

uint16_t HttpServer::port() const {
  return loop_->port;
}

HttpServer::Counters HttpServer::counters() const {
  return {loop_->accepted, loop_->evicted, loop_->timed_out, loop_->rejected, loop_->answered};
}

}  // namespace funclatency
