// The TLS side of the /metrics endpoint: an OpenSSL server context built
// from a web-config's tls_server_config (certificate and key, client CA and
// client_auth_type, TLS versions, cipher suites), the way Go's crypto/tls
// reads the same settings in Prometheus' exporter-toolkit.
#pragma once

#include <memory>

#include "common/error.h"
#include "output/prometheus/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace funclatency {

class TlsServerContext {
 public:
  // Reads every file now (so a later change of user cannot make them
  // unreadable) and checks that the key matches the certificate. A file that
  // cannot be read or parsed is kBadInput naming the file and the option.
  static Result<std::shared_ptr<TlsServerContext>> create(const TlsServerConfig& config);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  SSL_CTX* native() const { return context_; }

 private:
  struct Owned;  // what the context's callbacks read
  TlsServerContext(SSL_CTX* context, std::unique_ptr<Owned> owned);
  SSL_CTX* context_;
  std::unique_ptr<Owned> owned_;
};

}  // namespace funclatency
