// tls_server_config -> SSL_CTX. Certificates and keys are read into memory
// here, so they stay usable after funclatency drops its privileges; a
// rotation on disk is read (without privileges) when a connection arrives.
#include "http/tls_server.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

#include "common/read_file.h"

namespace funclatency {

namespace {

std::string openssl_reason() {
  unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return {};
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

Result<std::string> read_file(const std::string& path, std::string_view field) {
  auto content = read_whole_file(path);
  if (!content) {
    return bad_input("--web-config: cannot read " + std::string(field) + " " + path, "",
                     content.error());
  }
  return std::move(*content);
}

// The PEM given inline, or read from its file.
Result<std::string> pem_of(const std::string& inline_pem, const std::string& path,
                           std::string_view field) {
  if (!inline_pem.empty()) return inline_pem;
  return read_file(path, field);
}

// Every certificate in a PEM text, in order.
Result<std::vector<OwnedCertificate>> certificates(const std::string& pem, std::string_view what) {
  OwnedBio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<OwnedCertificate> found;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    found.emplace_back(cert);
  }
  ERR_clear_error();  // the end of the text reads as an error
  if (found.empty()) {
    return bad_input("--web-config: " + std::string(what) + " holds no PEM certificate");
  }
  return found;
}

// Go's crypto/tls names of the TLS 1.2 suites it offers, in OpenSSL's names.
const std::map<std::string, std::string, std::less<>> kCipherSuites = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
};
const std::map<std::string, std::string, std::less<>> kCurves = {
    {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

int protocol_version(const std::string& name) {
  if (name == "TLS10") return TLS1_VERSION;
  if (name == "TLS11") return TLS1_1_VERSION;
  if (name == "TLS12") return TLS1_2_VERSION;
  return TLS1_3_VERSION;
}

// Joins Go names as OpenSSL's colon-separated list.
Result<std::string> openssl_list(const std::vector<std::string>& names,
                                 const std::map<std::string, std::string, std::less<>>& table,
                                 std::string_view field) {
  std::string list;
  for (const auto& name : names) {
    auto found = table.find(name);
    if (found == table.end()) {
      return bad_input("--web-config: " + std::string(field) + " \"" + name + "\" is not known",
                       "use Go's crypto/tls names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 "
                       "or CurveP256");
    }
    list += (list.empty() ? "" : ":") + found->second;
  }
  return list;
}

// The subject alternative names of a certificate, as strings.
std::vector<std::string> alternative_names(X509* cert) {
  std::vector<std::string> names;
  OwnedGeneralNames owned_sans(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!owned_sans) return names;
  GENERAL_NAMES* sans = owned_sans.get();
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); i++) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans, i);
    if (name->type == GEN_DNS || name->type == GEN_EMAIL || name->type == GEN_URI) {
      const ASN1_IA5STRING* text = name->d.ia5;
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                         static_cast<size_t>(ASN1_STRING_length(text)));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      char text[64] = {};
      int family = ASN1_STRING_length(ip) == 16 ? AF_INET6 : AF_INET;
      if (inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof text)) names.emplace_back(text);
    }
  }
  return names;
}

int accept_any_certificate(int, X509_STORE_CTX*) {
  return 1;
}

// client_allowed_sans: the leaf certificate, verified by then, must name one.
int check_allowed_sans(int verified, X509_STORE_CTX* store) {
  if (!verified || X509_STORE_CTX_get_error_depth(store) != 0) return verified;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* allowed =
      static_cast<const std::vector<std::string>*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  for (const auto& name : alternative_names(X509_STORE_CTX_get_current_cert(store))) {
    if (std::find(allowed->begin(), allowed->end(), name) != allowed->end()) return 1;
  }
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

Result<void> load_certificate_and_key(SSL_CTX* context, const TlsServerConfig& config) {
  std::string cert_name = config.cert.empty() ? "cert_file " + config.cert_file : "cert";
  std::string key_name = config.key.empty() ? "key_file " + config.key_file : "key";
  auto cert_pem = pem_of(config.cert, config.cert_file, "cert_file");
  if (!cert_pem) return std::unexpected(cert_pem.error());
  auto chain = certificates(*cert_pem, cert_name);
  if (!chain) return std::unexpected(chain.error());
  if (SSL_CTX_use_certificate(context, chain->front().get()) != 1) {
    return bad_input("--web-config: " + cert_name + " cannot be used: " + openssl_reason());
  }
  for (size_t i = 1; i < chain->size(); i++) {
    if (SSL_CTX_add1_chain_cert(context, (*chain)[i].get()) != 1) {
      return bad_input("--web-config: " + cert_name +
                       " has a chain certificate that cannot be "
                       "used: " +
                       openssl_reason());
    }
  }
  auto key_pem = pem_of(config.key, config.key_file, "key_file");
  if (!key_pem) return std::unexpected(key_pem.error());
  OwnedBio bio(BIO_new_mem_buf(key_pem->data(), static_cast<int>(key_pem->size())));
  OwnedKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return bad_input("--web-config: " + key_name + " holds no PEM private key");
  if (SSL_CTX_use_PrivateKey(context, key.get()) != 1 || SSL_CTX_check_private_key(context) != 1) {
    return bad_input("--web-config: " + key_name + " is not the key of " + cert_name + ": " +
                     openssl_reason());
  }
  return {};
}

Result<void> load_client_verification(SSL_CTX* context, const TlsServerConfig& config,
                                      const std::vector<std::string>* allowed_sans) {
  if (!config.client_ca_file.empty()) {
    auto pem = read_file(config.client_ca_file, "client_ca_file");
    if (!pem) return std::unexpected(pem.error());
    auto authorities = certificates(*pem, "client_ca_file " + config.client_ca_file);
    if (!authorities) return std::unexpected(authorities.error());
    X509_STORE* store = SSL_CTX_get_cert_store(context);
    for (const auto& authority : *authorities) {
      if (X509_STORE_add_cert(store, authority.get()) != 1 ||
          SSL_CTX_add_client_CA(context, authority.get()) != 1) {
        return bad_input("--web-config: client_ca_file " + config.client_ca_file +
                         " cannot be used: " + openssl_reason());
      }
    }
  }
  const std::string& type = config.client_auth_type;
  if (type == "RequestClientCert") {
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, accept_any_certificate);
  } else if (type == "RequireAnyClientCert") {
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       accept_any_certificate);
  } else if (type == "VerifyClientCertIfGiven") {
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  } else if (type == "RequireAndVerifyClientCert") {
    SSL_CTX_set_app_data(context, const_cast<std::vector<std::string>*>(allowed_sans));
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       allowed_sans->empty() ? nullptr : check_allowed_sans);
  } else {
    SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr);
  }
  return {};
}

}  // namespace

struct TlsServerContext::Owned {
  std::vector<std::string> allowed_sans;  // read by check_allowed_sans
};

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::create(const TlsServerConfig& config) {
  OwnedSslContext context(SSL_CTX_new(TLS_server_method()));
  if (!context) return runtime_error("create a TLS server context: " + openssl_reason());
  SSL_CTX_set_min_proto_version(context.get(), protocol_version(config.min_version));
  SSL_CTX_set_max_proto_version(context.get(), protocol_version(config.max_version));
  // No session cache: each scrape is a full handshake, and nothing per
  // client outlives its connection.
  SSL_CTX_set_session_cache_mode(context.get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(context.get(), SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  auto ciphers = openssl_list(config.cipher_suites, kCipherSuites, "cipher_suites");
  if (!ciphers) return std::unexpected(ciphers.error());
  if (!ciphers->empty() && SSL_CTX_set_cipher_list(context.get(), ciphers->c_str()) != 1) {
    return bad_input("--web-config: cipher_suites cannot be used: " + openssl_reason());
  }
  auto curves = openssl_list(config.curve_preferences, kCurves, "curve_preferences");
  if (!curves) return std::unexpected(curves.error());
  if (!curves->empty() && SSL_CTX_set1_groups_list(context.get(), curves->c_str()) != 1) {
    return bad_input("--web-config: curve_preferences cannot be used: " + openssl_reason());
  }
  if (auto loaded = load_certificate_and_key(context.get(), config); !loaded) {
    return std::unexpected(loaded.error());
  }
  auto owned = std::make_unique<Owned>();
  owned->allowed_sans = config.client_allowed_sans;
  if (auto verified = load_client_verification(context.get(), config, &owned->allowed_sans);
      !verified) {
    return std::unexpected(verified.error());
  }
  return std::shared_ptr<TlsServerContext>(
      new TlsServerContext(std::move(context), std::move(owned)));
}

TlsServerContext::TlsServerContext(OwnedSslContext context, std::unique_ptr<Owned> owned)
    : owned_(std::move(owned)), context_(std::move(context)) {}

TlsServerContext::~TlsServerContext() = default;

bool TlsContextSource::Stamp::operator==(const Stamp& other) const {
  return error == other.error && device == other.device && inode == other.inode &&
         size == other.size && modified.tv_sec == other.modified.tv_sec &&
         modified.tv_nsec == other.modified.tv_nsec && changed.tv_sec == other.changed.tv_sec &&
         changed.tv_nsec == other.changed.tv_nsec;
}

namespace {

// stat() follows symbolic links: a Kubernetes Secret volume swaps its
// ..data link, so the file reached changes inode.
TlsContextSource::Stamp stamp_of(const std::string& path) {
  if (path.empty()) return {};
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return {.error = errno};
  return {.device = info.st_dev,
          .inode = info.st_ino,
          .size = info.st_size,
          .modified = info.st_mtim,
          .changed = info.st_ctim};
}

// cert_file, key_file, client_ca_file; inline PEM has no file.
std::array<TlsContextSource::Stamp, 3> stamps_of(const TlsServerConfig& config) {
  return {stamp_of(config.cert.empty() ? config.cert_file : std::string()),
          stamp_of(config.key.empty() ? config.key_file : std::string()),
          stamp_of(config.client_ca_file)};
}

}  // namespace

Result<std::unique_ptr<TlsContextSource>> TlsContextSource::create(TlsServerConfig config,
                                                                   Log log) {
  // The files are looked at before they are read: a change in between is
  // seen by the next current() and read again, never missed.
  auto stamps = stamps_of(config);
  auto context = TlsServerContext::create(config);
  if (!context) return std::unexpected(context.error());
  std::unique_ptr<TlsContextSource> source(
      new TlsContextSource(std::move(config), std::move(log), std::move(*context)));
  source->built_from_ = stamps;
  source->refused_ = stamps;
  return source;
}

TlsContextSource::TlsContextSource(TlsServerConfig config, Log log,
                                   std::shared_ptr<TlsServerContext> context)
    : config_(std::move(config)), log_(std::move(log)), context_(std::move(context)) {
  // Inline PEM (cert, key) has no file to watch.
  watched_ = (config_.cert.empty() && !config_.cert_file.empty()) ||
             (config_.key.empty() && !config_.key_file.empty()) || !config_.client_ca_file.empty();
}

std::shared_ptr<TlsServerContext> TlsContextSource::current() {
  if (!watched_) return context_;
  auto now = stamps_of(config_);
  // Unchanged since the context in force was built, or the same change
  // that was refused already: nothing to read.
  if (now == built_from_ || now == refused_) return context_;
  auto rebuilt = TlsServerContext::create(config_);
  if (!rebuilt) {
    refused_ = now;
    if (log_) {
      log_(
          "--web-config: the changed TLS files cannot be used, new connections keep the "
          "previous certificate: " +
          rebuilt.error().message());
    }
    return context_;
  }
  context_ = std::move(*rebuilt);
  built_from_ = now;
  refused_ = now;
  if (log_) {
    log_("--web-config: TLS files changed on disk; new connections use cert_file " +
         (config_.cert.empty() ? config_.cert_file : std::string("(inline)")));
  }
  return context_;
}

}  // namespace funclatency
