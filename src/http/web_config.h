// `--web-config FILE`: the web configuration file of Prometheus'
// exporter-toolkit (node_exporter's --web.config.file), so the file a site
// already uses for its exporters works unchanged: TLS (tls_server_config),
// basic authentication (basic_auth_users, bcrypt hashes) and response
// headers (http_server_config.headers). Parsing is pure; reading the
// certificates is tls_server.cpp's.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace funclatency {

struct TlsServerConfig {
  // Paths are absolute: relative ones are taken from the file's directory,
  // as exporter-toolkit does. `cert`/`key` hold inline PEM instead.
  std::string cert_file, key_file, cert, key;
  std::string client_ca_file;
  // NoClientCert, RequestClientCert, RequireAnyClientCert,
  // VerifyClientCertIfGiven, RequireAndVerifyClientCert.
  std::string client_auth_type = "NoClientCert";
  std::vector<std::string> client_allowed_sans;  // a client certificate must name one
  std::string min_version = "TLS12", max_version = "TLS13";
  std::vector<std::string> cipher_suites;  // Go names, TLS 1.2 only (as in Go)
  std::vector<std::string> curve_preferences;
};

struct WebConfig {
  std::optional<TlsServerConfig> tls;                                // none: plain HTTP
  std::map<std::string, std::string, std::less<>> basic_auth_users;  // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;          // sent with every answer
};

// `text` is the file's content, `directory` where relative paths start.
// Unknown fields, wrong types and bad values are kBadInput naming the field
// (and the line), as Go's strict YAML decoding in exporter-toolkit refuses them.
Result<WebConfig> parse_web_config(std::string_view text, const std::filesystem::path& directory);

// Reads and parses `path`; errors start with "--web-config PATH: ".
Result<WebConfig> load_web_config(const std::string& path);

}  // namespace funclatency
