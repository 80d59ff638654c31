// The exporter-toolkit web-config schema (web/tls_config.go) decoded with
// yaml-cpp: every field it knows, checked the way it checks them.
#include "http/web_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include "common/read_file.h"
#include "common/yaml_fields.h"

namespace funclatency {

namespace {

using yaml::absent;
using yaml::boolean;
using yaml::check_fields;
using yaml::fail;
using yaml::Invalid;
using yaml::scalar;
using yaml::strings;

std::string resolved(const std::string& path, const std::filesystem::path& directory) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (directory / path).lexically_normal().string();
}

const std::set<std::string_view> kClientAuthTypes = {
    "NoClientCert",      "RequestClientCert",       "RequireAnyClientCert",
    "RequireClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"};
const std::set<std::string_view> kTlsVersions = {"TLS10", "TLS11", "TLS12", "TLS13"};
// exporter-toolkit forbids the rest (web/tls_config.go, extraHTTPHeaders).
const std::set<std::string_view> kSettableHeaders = {"Strict-Transport-Security",
                                                     "X-Content-Type-Options", "X-Frame-Options",
                                                     "X-XSS-Protection", "Content-Security-Policy"};

std::optional<TlsServerConfig> decode_tls(const YAML::Node& node,
                                          const std::filesystem::path& directory) {
  if (absent(node)) return std::nullopt;
  check_fields(node, "tls_server_config",
               {"cert_file", "key_file", "cert", "key", "client_ca_file", "client_auth_type",
                "client_allowed_sans", "cipher_suites", "curve_preferences", "min_version",
                "max_version", "prefer_server_cipher_suites"});
  TlsServerConfig tls;
  tls.cert_file = resolved(scalar(node["cert_file"], "cert_file"), directory);
  tls.key_file = resolved(scalar(node["key_file"], "key_file"), directory);
  tls.cert = scalar(node["cert"], "cert");
  tls.key = scalar(node["key"], "key");
  tls.client_ca_file = resolved(scalar(node["client_ca_file"], "client_ca_file"), directory);
  std::string auth = scalar(node["client_auth_type"], "client_auth_type");
  tls.client_allowed_sans = strings(node["client_allowed_sans"], "client_allowed_sans");
  tls.cipher_suites = strings(node["cipher_suites"], "cipher_suites");
  tls.curve_preferences = strings(node["curve_preferences"], "curve_preferences");
  if (!absent(node["prefer_server_cipher_suites"])) {
    boolean(node["prefer_server_cipher_suites"], "prefer_server_cipher_suites");
  }
  if (!absent(node["min_version"])) tls.min_version = scalar(node["min_version"], "min_version");
  if (!absent(node["max_version"])) tls.max_version = scalar(node["max_version"], "max_version");

  // exporter-toolkit: nothing about TLS set means plain HTTP.
  if (tls.cert_file.empty() && tls.key_file.empty() && tls.cert.empty() && tls.key.empty() &&
      tls.client_ca_file.empty() && auth.empty()) {
    return std::nullopt;
  }
  if (tls.cert_file.empty() && tls.cert.empty()) fail(node, "tls_server_config: missing cert_file");
  if (tls.key_file.empty() && tls.key.empty()) fail(node, "tls_server_config: missing key_file");
  if (!tls.cert_file.empty() && !tls.cert.empty()) {
    fail(node, "tls_server_config: cert and cert_file are mutually exclusive");
  }
  if (!tls.key_file.empty() && !tls.key.empty()) {
    fail(node, "tls_server_config: key and key_file are mutually exclusive");
  }
  if (!auth.empty()) {
    if (!kClientAuthTypes.contains(auth)) {
      fail(node["client_auth_type"],
           "client_auth_type \"" + auth +
               "\" is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, "
               "VerifyClientCertIfGiven, RequireAndVerifyClientCert");
    }
    tls.client_auth_type = auth == "RequireClientCert" ? "RequireAnyClientCert" : auth;
  }
  if (!tls.client_ca_file.empty() && tls.client_auth_type == "NoClientCert") {
    fail(node, "tls_server_config: client_ca_file is set without a client_auth_type");
  }
  if (tls.client_ca_file.empty() && (tls.client_auth_type == "VerifyClientCertIfGiven" ||
                                     tls.client_auth_type == "RequireAndVerifyClientCert")) {
    fail(node, "tls_server_config: client_auth_type " + tls.client_auth_type +
                   " needs a client_ca_file to verify against");
  }
  if (!tls.client_allowed_sans.empty() && tls.client_auth_type != "RequireAndVerifyClientCert") {
    fail(node,
         "tls_server_config: client_allowed_sans needs client_auth_type "
         "RequireAndVerifyClientCert");
  }
  for (const auto* version : {&tls.min_version, &tls.max_version}) {
    if (!kTlsVersions.contains(*version)) {
      fail(node, "TLS version \"" + *version + "\" is not one of TLS10, TLS11, TLS12, TLS13");
    }
  }
  if (tls.min_version > tls.max_version) {
    fail(node, "tls_server_config: min_version is above max_version");
  }
  return tls;
}

std::vector<std::pair<std::string, std::string>> decode_http(const YAML::Node& node) {
  if (absent(node)) return {};
  check_fields(node, "http_server_config", {"http2", "headers"});
  if (!absent(node["http2"])) boolean(node["http2"], "http2");  // answers are HTTP/1.1 either way
  std::vector<std::pair<std::string, std::string>> headers;
  const YAML::Node map = node["headers"];
  if (absent(map)) return headers;
  if (!map.IsMap()) fail(map, "http_server_config.headers must be a mapping");
  for (const auto& entry : map) {
    std::string name = entry.first.Scalar();
    if (!kSettableHeaders.contains(name)) {
      fail(entry.first, "HTTP header \"" + name +
                            "\" can not be configured (only "
                            "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, "
                            "X-XSS-Protection, Content-Security-Policy)");
    }
    std::string value = scalar(entry.second, name);
    if (value.find_first_of("\r\n") != std::string::npos) {
      fail(entry.second, "HTTP header \"" + name + "\" has a line break in its value");
    }
    headers.emplace_back(std::move(name), std::move(value));
  }
  return headers;
}

// A bcrypt hash as Go's x/crypto/bcrypt writes it: $2a$, $2b$ or $2y$, a
// two-digit cost (4..31), 53 characters of salt and hash.
bool is_bcrypt_hash(std::string_view hash) {
  if (hash.size() != 60 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' || hash[6] != '$') {
    return false;
  }
  if (std::string_view("aby").find(hash[2]) == std::string_view::npos) return false;
  if (!std::isdigit(static_cast<unsigned char>(hash[4])) ||
      !std::isdigit(static_cast<unsigned char>(hash[5]))) {
    return false;
  }
  int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(hash.begin() + 7, hash.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '/';
  });
}

std::map<std::string, std::string, std::less<>> decode_users(const YAML::Node& node) {
  std::map<std::string, std::string, std::less<>> users;
  if (absent(node)) return users;
  if (!node.IsMap()) fail(node, "basic_auth_users must be a mapping of user: bcrypt hash");
  for (const auto& entry : node) {
    std::string user = scalar(entry.first, "basic_auth_users");
    if (user.find(':') != std::string::npos) {
      fail(entry.first, "basic_auth_users: user \"" + user + "\" has a ':'");
    }
    std::string hash = scalar(entry.second, "basic_auth_users." + user);
    if (!is_bcrypt_hash(hash)) {
      fail(entry.second, "basic_auth_users." + user +
                             " is not a bcrypt hash (make one with htpasswd -nBC 10 USER)");
    }
    users.emplace(std::move(user), std::move(hash));
  }
  return users;
}

}  // namespace

Result<WebConfig> parse_web_config(std::string_view text, const std::filesystem::path& directory) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    WebConfig config;
    if (absent(root)) return config;  // an empty file: plain HTTP, no auth
    check_fields(root, "the web config",
                 {"tls_server_config", "http_server_config", "basic_auth_users"});
    config.tls = decode_tls(root["tls_server_config"], directory);
    config.headers = decode_http(root["http_server_config"]);
    config.basic_auth_users = decode_users(root["basic_auth_users"]);
    return config;
  } catch (const Invalid& invalid) {
    return bad_input(invalid.message);
  } catch (const YAML::Exception& failure) {
    std::string where = failure.mark.is_null()
                            ? std::string()
                            : "line " + std::to_string(failure.mark.line + 1) + ": ";
    return bad_input("not valid YAML: " + where + failure.msg);
  }
}

Result<WebConfig> load_web_config(const std::string& path) {
  std::string prefix = "--web-config " + path + ": ";
  auto content = read_whole_file(path);
  if (!content) return bad_input("--web-config: cannot read " + path, "", content.error());
  auto config = parse_web_config(*content, std::filesystem::path(path).parent_path());
  if (!config) {
    Error error = config.error();
    error.context = prefix + error.context;
    return std::unexpected(std::move(error));
  }
  return config;
}

}  // namespace funclatency
