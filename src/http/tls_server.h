// The TLS side of the HTTP server: an OpenSSL server context built from a
// web-config's tls_server_config (certificate and key, client CA and
// client_auth_type, TLS versions, cipher suites), the way Go's crypto/tls
// reads the same settings in Prometheus' exporter-toolkit; and the source
// of that context for each new connection, which rebuilds it when the
// certificate, key or client CA file changes on disk (a cert-manager renewal,
// a Kubernetes Secret update), as exporter-toolkit re-reads them, so a
// rotation needs no restart.
#pragma once

#include <sys/types.h>

#include <array>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/non_copyable.h"
#include "common/openssl_handles.h"
#include "http/web_config.h"

namespace funclatency {

class TlsServerContext : NonCopyable {
 public:
  // Reads every file now (so a later change of user cannot make them
  // unreadable) and checks that the key matches the certificate. A file that
  // cannot be read or parsed is kBadInput naming the file and the option.
  static Result<std::shared_ptr<TlsServerContext>> create(const TlsServerConfig& config);
  ~TlsServerContext();

  SSL_CTX* native() const { return context_.get(); }

 private:
  struct Owned;  // what the context's callbacks read
  TlsServerContext(OwnedSslContext context, std::unique_ptr<Owned> owned);
  // Declared first so it outlives the context, which is freed first.
  std::unique_ptr<Owned> owned_;
  OwnedSslContext context_;
};

// Where a new connection gets its context. Used on the server thread only.
class TlsContextSource {
 public:
  using Log = std::function<void(std::string_view)>;
  // The context as create() builds it, and the files' identities now.
  // `log` hears of each rotation, and once of each change that cannot be used.
  static Result<std::unique_ptr<TlsContextSource>> create(TlsServerConfig config, Log log = {});
  // The context for a connection accepted now: looks at the files (stat,
  // no read) and, when one changed since the context in force was built,
  // builds a new one. A change that cannot be used (a half-written file, a
  // key that is not the certificate's, a file no longer readable after
  // --user) keeps the context in force, said once until the files change
  // again. Connections hold the context they began with.
  std::shared_ptr<TlsServerContext> current();

  // What identifies a file's content without reading it.
  struct Stamp {
    int error = 0;  // stat's errno; the rest is zero then
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{}, changed{};
    bool operator==(const Stamp& other) const;
  };

 private:
  TlsContextSource(TlsServerConfig config, Log log, std::shared_ptr<TlsServerContext> context);
  TlsServerConfig config_;
  Log log_;
  std::shared_ptr<TlsServerContext> context_;
  // cert_file, key_file, client_ca_file as the context in force was read from them.
  std::array<Stamp, 3> built_from_;
  std::array<Stamp, 3> refused_;  // the last change that could not be used
  bool watched_ = false;          // some file is named (not inline PEM only)
};

}  // namespace funclatency
