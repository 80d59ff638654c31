// The files OTEL_EXPORTER_OTLP_[METRICS_]CERTIFICATE, CLIENT_CERTIFICATE and
// CLIENT_KEY name, read into memory when the transport is made (before
// anything is attached, and before funclatency drops its privileges, so a
// root-only key stays usable) and checked to hold PEM.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "output/otlp/otlp_options.h"

namespace funclatency {

struct OtlpTlsMaterial {
  std::string ca_pem;           // empty: the system's CAs
  std::string client_cert_pem;  // empty: no client certificate
  std::string client_key_pem;
};

// A file that cannot be read or holds no PEM certificate (key) is kBadInput
// naming the variable and the file.
Result<OtlpTlsMaterial> load_otlp_tls(const OtlpTlsOptions& tls);

// The line said when the receiver's certificate does not verify, with the
// library's own words in `detail`.
std::string certificate_refused(std::string_view endpoint, const OtlpTlsOptions& tls,
                                std::string_view detail);

}  // namespace funclatency
