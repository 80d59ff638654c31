// The exporter-toolkit web-config parser: what a node_exporter file gives,
// and one clear error for each kind of mistake.
#include "http/web_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace funclatency {
namespace {

constexpr const char* kHash = "$2y$10$abcdefghijklmnopqrstuuqflPDzB6gcMhKa1rZqKiun2YGL5sa2u";

WebConfig parse_ok(const std::string& text) {
  auto config = parse_web_config(text, "/etc/exporter");
  EXPECT_TRUE(config) << (config ? "" : config.error().message());
  return config ? *config : WebConfig{};
}

std::string error_of(const std::string& text) {
  auto config = parse_web_config(text, "/etc/exporter");
  EXPECT_FALSE(config) << text;
  if (config) return {};
  EXPECT_EQ(config.error().exit_code(), 2);
  return config.error().message();
}

TEST(WebConfig, ReadsANodeExporterFile) {
  WebConfig config = parse_ok(std::string(R"(
tls_server_config:
  cert_file: server.crt
  key_file: /secure/server.key
  client_ca_file: ca/clients.pem
  client_auth_type: RequireAndVerifyClientCert
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [X25519]
http_server_config:
  http2: false
  headers:
    Strict-Transport-Security: max-age=31536000
    X-Frame-Options: deny
basic_auth_users:
  alice: )") + kHash + "\n");
  ASSERT_TRUE(config.tls);
  EXPECT_EQ(config.tls->cert_file, "/etc/exporter/server.crt");  // from the file's folder
  EXPECT_EQ(config.tls->key_file, "/secure/server.key");
  EXPECT_EQ(config.tls->client_ca_file, "/etc/exporter/ca/clients.pem");
  EXPECT_EQ(config.tls->client_auth_type, "RequireAndVerifyClientCert");
  EXPECT_EQ(config.tls->min_version, "TLS13");
  EXPECT_EQ(config.tls->max_version, "TLS13");
  EXPECT_EQ(config.tls->cipher_suites.size(), 1u);
  ASSERT_EQ(config.headers.size(), 2u);
  EXPECT_EQ(config.headers[1], (std::pair<std::string, std::string>{"X-Frame-Options", "deny"}));
  ASSERT_EQ(config.basic_auth_users.count("alice"), 1u);
  EXPECT_EQ(config.basic_auth_users.at("alice"), kHash);
}

TEST(WebConfig, EmptyOrTlsFreeFilesServePlainHttp) {
  EXPECT_FALSE(parse_ok("").tls);
  EXPECT_FALSE(parse_ok("# only a comment\n").tls);
  EXPECT_FALSE(parse_ok("tls_server_config:\n").tls);
  EXPECT_FALSE(parse_ok("tls_server_config:\n  min_version: TLS12\n").tls);
  EXPECT_TRUE(parse_ok("basic_auth_users:\n").basic_auth_users.empty());
}

TEST(WebConfig, OldClientAuthNameIsKept) {
  auto config = parse_ok(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireClientCert\n");
  EXPECT_EQ(config.tls->client_auth_type, "RequireAnyClientCert");
}

TEST(WebConfig, MistakesAreNamed) {
  EXPECT_NE(error_of("tls_server_config:\n  cert_fil: a\n")
                .find("unknown field \"cert_fil\" in tls_server_config"),
            std::string::npos);
  EXPECT_NE(error_of("tls_config:\n  cert_file: a\n").find("(line 1)"), std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n").find("missing key_file"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  key_file: a\n").find("missing cert_file"),
            std::string::npos);
  EXPECT_NE(error_of("basic_auth_users:\n  bob: plain\n")
                .find("basic_auth_users.bob is not a "
                      "bcrypt hash"),
            std::string::npos);
  EXPECT_NE(error_of("basic_auth_users: [a]\n").find("mapping"), std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n")
                .find("client_ca_file is set without a client_auth_type"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                     "  client_auth_type: VerifyClientCertIfGiven\n")
                .find("needs a client_ca_file"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS9\n")
                .find("\"TLS9\""),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
                     "  max_version: TLS12\n")
                .find("min_version is above max_version"),
            std::string::npos);
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    Set-Cookie: x\n")
                .find("HTTP header \"Set-Cookie\" can not be configured"),
            std::string::npos);
  EXPECT_NE(error_of("http_server_config:\n  http2: perhaps\n").find("http2 must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config: [\n").find("not valid YAML: line"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("must be a mapping"), std::string::npos);
}

TEST(WebConfig, MissingFileIsBadInputWithErrno) {
  auto config = load_web_config("/nonexistent/web.yml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().exit_code(), 2);
  EXPECT_EQ(config.error().errno_value, ENOENT);
  EXPECT_NE(config.error().message().find("--web-config: cannot read /nonexistent/web.yml"),
            std::string::npos);
}

TEST(WebConfig, FileErrorsNameTheFile) {
  char path[] = "/tmp/web-config-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string text = "nonsense: 1\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  auto config = load_web_config(path);
  unlink(path);
  ASSERT_FALSE(config);
  EXPECT_EQ(
      config.error().message().rfind("--web-config " + std::string(path) + ": unknown field", 0),
      0u)
      << config.error().message();
}

}  // namespace
}  // namespace funclatency
