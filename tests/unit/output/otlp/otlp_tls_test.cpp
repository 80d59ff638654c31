// OTLP transport security from the OTEL_* variables (pure), and the files
// they name read by load_otlp_tls.
#include "output/otlp/otlp_tls.h"

#include <gtest/gtest.h>

#include "otlp_test_reports.h"
#include "output/otlp/otlp_options.h"

namespace funclatency {
namespace {

using testing::resolve_ok;

TEST(OtlpTls, TheSchemeDecidesForHttp) {
  EXPECT_FALSE(resolve_ok({}).tls.enabled);
  auto options = resolve_ok({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"},
                             {"OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem"},
                             {"OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "/metrics-ca.pem"},
                             {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem"},
                             {"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/c.key"}});
  EXPECT_TRUE(options.tls.enabled);
  EXPECT_EQ(options.tls.certificate_file, "/metrics-ca.pem");  // the metrics variable wins
  EXPECT_EQ(options.tls.client_certificate_file, "/c.pem");
  EXPECT_EQ(options.tls.client_key_file, "/c.key");
  // A scheme-less HTTP endpoint stays plain, INSECURE or not.
  EXPECT_FALSE(resolve_ok({{"OTEL_EXPORTER_OTLP_INSECURE", "false"}},
                          {.enabled = true, .endpoint = "collector:4318"})
                   .tls.enabled);
}

TEST(OtlpTls, AGrpcEndpointWithoutSchemeIsSecureUnlessInsecure) {
  OtlpCliValues cli{.enabled = true, .endpoint = "collector:4317", .protocol = "grpc"};
  auto secure = resolve_ok({}, cli);
  EXPECT_EQ(secure.endpoint, "https://collector:4317");
  EXPECT_TRUE(secure.tls.enabled);
  auto insecure = resolve_ok({{"OTEL_EXPORTER_OTLP_METRICS_INSECURE", "TRUE"}}, cli);
  EXPECT_EQ(insecure.endpoint, "http://collector:4317");
  EXPECT_FALSE(insecure.tls.enabled);
  // A scheme says it all.
  cli.endpoint = "http://collector:4317";
  EXPECT_FALSE(resolve_ok({{"OTEL_EXPORTER_OTLP_INSECURE", "false"}}, cli).tls.enabled);
  auto from_env = resolve_ok({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4317"},
                              {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}});
  EXPECT_EQ(from_env.endpoint, "https://collector:4317");
}

TEST(OtlpTls, HalfAClientIdentityOrABadInsecureIsBadInput) {
  for (const EnvironmentMap& env :
       {EnvironmentMap{{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem"}},
        EnvironmentMap{{"OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "/c.key"}},
        EnvironmentMap{{"OTEL_EXPORTER_OTLP_INSECURE", "yes"}}}) {
    auto options = resolve_otlp_options(env, {.enabled = true});
    ASSERT_FALSE(options);
    EXPECT_EQ(options.error().exit_code(), 2);
    EXPECT_NE(options.error().message().find("OTEL_EXPORTER_OTLP_"), std::string::npos);
  }
}

TEST(OtlpTls, FilesThatCannotBeUsedAreNamed) {
  OtlpTlsOptions tls{.enabled = true, .certificate_file = "/nonexistent/ca.pem"};
  auto missing = load_otlp_tls(tls);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().errno_value, ENOENT);
  EXPECT_NE(missing.error().message().find("OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read "
                                           "/nonexistent/ca.pem"),
            std::string::npos);
  tls.certificate_file = "/etc/hostname";  // not PEM
  auto not_pem = load_otlp_tls(tls);
  ASSERT_FALSE(not_pem);
  EXPECT_NE(not_pem.error().message().find("holds no PEM certificate"), std::string::npos);
  EXPECT_TRUE(load_otlp_tls({}).has_value());  // nothing to read
}

TEST(OtlpTls, TheRefusalNamesWhatWasTrusted) {
  OtlpTlsOptions tls{.enabled = true, .certificate_file = "/ca.pem"};
  EXPECT_EQ(certificate_refused("https://c:4318/v1/metrics", tls, "unable to get issuer"),
            "the certificate of https://c:4318/v1/metrics does not verify against "
            "OTEL_EXPORTER_OTLP_CERTIFICATE /ca.pem (unable to get issuer)");
  EXPECT_NE(certificate_refused("x", {}, "y").find("the system's CAs"), std::string::npos);
}

}  // namespace
}  // namespace funclatency
