// Reading and checking the OTLP exporter's certificates and key.
#include "output/otlp/otlp_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/openssl_handles.h"
#include "common/read_file.h"

namespace funclatency {

namespace {

Result<std::string> read_pem(const std::string& path, std::string_view variable, bool key) {
  auto read = read_whole_file(path);
  if (!read) return bad_input(std::string(variable) + ": cannot read " + path, "", read.error());
  std::string pem = std::move(*read);
  OwnedBio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  bool parsed = false;
  if (key) {
    parsed = OwnedKey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)) != nullptr;
  } else {
    parsed = OwnedCertificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) != nullptr;
  }
  ERR_clear_error();
  if (!parsed) {
    return bad_input(std::string(variable) + ": " + path + " holds no PEM " +
                     (key ? "private key" : "certificate"));
  }
  return pem;
}

}  // namespace

Result<OtlpTlsMaterial> load_otlp_tls(const OtlpTlsOptions& tls) {
  OtlpTlsMaterial material;
  if (!tls.certificate_file.empty()) {
    auto pem = read_pem(tls.certificate_file, "OTEL_EXPORTER_OTLP_CERTIFICATE", false);
    if (!pem) return std::unexpected(pem.error());
    material.ca_pem = std::move(*pem);
  }
  if (!tls.client_certificate_file.empty()) {
    auto pem =
        read_pem(tls.client_certificate_file, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", false);
    if (!pem) return std::unexpected(pem.error());
    material.client_cert_pem = std::move(*pem);
    auto key = read_pem(tls.client_key_file, "OTEL_EXPORTER_OTLP_CLIENT_KEY", true);
    if (!key) return std::unexpected(key.error());
    material.client_key_pem = std::move(*key);
  }
  return material;
}

std::string certificate_refused(std::string_view endpoint, const OtlpTlsOptions& tls,
                                std::string_view detail) {
  std::string trusted = tls.certificate_file.empty()
                            ? std::string("the system's CAs")
                            : "OTEL_EXPORTER_OTLP_CERTIFICATE " + tls.certificate_file;
  return "the certificate of " + std::string(endpoint) + " does not verify against " + trusted +
         " (" + std::string(detail) + ")";
}

}  // namespace funclatency
