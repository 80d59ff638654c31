#include "output/otlp/otlp_options.h"

#include <gtest/gtest.h>

#include "otlp_test_reports.h"

namespace funclatency {
namespace {

using namespace std::chrono_literals;

using testing::resolve_ok;

Error resolve_error(const EnvironmentMap& env, const OtlpCliValues& cli = {.enabled = true}) {
  auto options = resolve_otlp_options(env, cli);
  EXPECT_FALSE(options.has_value());
  return options ? Error{} : options.error();
}

TEST(OtlpOptions, DefaultsFollowTheSdks) {
  auto options = resolve_ok({});
  EXPECT_EQ(options.endpoint, "http://localhost:4318/v1/metrics");
  EXPECT_EQ(options.protocol, OtlpProtocol::kHttpProtobuf);
  EXPECT_EQ(options.timeout, 10s);
  EXPECT_EQ(options.export_interval, 60s);
  EXPECT_FALSE(options.gzip);
  EXPECT_EQ(options.temporality, OtlpTemporality::kCumulative);
  EXPECT_EQ(options.histogram, OtlpHistogramKind::kExplicit);
  EXPECT_FALSE(options.pid_attribute);
  EXPECT_EQ(options.service_name, "funclatency");
  EXPECT_TRUE(options.headers.empty());
}

TEST(OtlpOptions, GrpcDefaultsToPort4317WithoutPath) {
  auto options = resolve_ok({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}});
  EXPECT_EQ(options.protocol, OtlpProtocol::kGrpc);
  EXPECT_EQ(options.endpoint, "http://localhost:4317");
}

TEST(OtlpOptions, GeneralEndpointIsABaseForTheMetricsPath) {
  EXPECT_EQ(resolve_ok({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}).endpoint,
            "http://collector:4318/v1/metrics");
  EXPECT_EQ(resolve_ok({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector/otlp/"}}).endpoint,
            "https://collector/otlp/v1/metrics");
  // gRPC takes it as it is.
  EXPECT_EQ(resolve_ok({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"},
                        {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}})
                .endpoint,
            "http://collector:4317");
}

TEST(OtlpOptions, MetricsEndpointIsUsedAsGivenAndWins) {
  auto options =
      resolve_ok({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4318"},
                  {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9999/custom"}});
  EXPECT_EQ(options.endpoint, "http://metrics:9999/custom");
}

TEST(OtlpOptions, CommandLineUrlWinsAndGetsThePathWhenItHasNone) {
  EnvironmentMap env{{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://env:4318/v1/metrics"}};
  EXPECT_EQ(resolve_ok(env, {.enabled = true, .endpoint = "http://127.0.0.1:5000"}).endpoint,
            "http://127.0.0.1:5000/v1/metrics");
  EXPECT_EQ(resolve_ok(env, {.enabled = true, .endpoint = "http://127.0.0.1:5000/in"}).endpoint,
            "http://127.0.0.1:5000/in");
  EXPECT_EQ(resolve_ok(env, {.enabled = true, .endpoint = "localhost:4318"}).endpoint,
            "http://localhost:4318/v1/metrics");
}

TEST(OtlpOptions, CommandLineProtocolAndTemporalityWin) {
  EnvironmentMap env{{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                     {"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta"}};
  auto from_env = resolve_ok(env);
  EXPECT_EQ(from_env.protocol, OtlpProtocol::kHttpJson);
  EXPECT_EQ(from_env.temporality, OtlpTemporality::kDelta);
  auto from_cli = resolve_ok(env, {.enabled = true,
                                   .protocol = "grpc",
                                   .histogram = "exponential",
                                   .temporality = "cumulative",
                                   .pid_attribute = true});
  EXPECT_EQ(from_cli.protocol, OtlpProtocol::kGrpc);
  EXPECT_EQ(from_cli.temporality, OtlpTemporality::kCumulative);
  EXPECT_EQ(from_cli.histogram, OtlpHistogramKind::kExponential);
  EXPECT_TRUE(from_cli.pid_attribute);
}

TEST(OtlpOptions, MetricsSpecificVariablesWinOverGeneralOnes) {
  auto options = resolve_ok({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                             {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"},
                             {"OTEL_EXPORTER_OTLP_TIMEOUT", "2000"},
                             {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "750"},
                             {"OTEL_EXPORTER_OTLP_HEADERS", "a=1"},
                             {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "b=2"},
                             {"OTEL_EXPORTER_OTLP_COMPRESSION", "none"},
                             {"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip"}});
  EXPECT_EQ(options.protocol, OtlpProtocol::kHttpJson);
  EXPECT_EQ(options.timeout, 750ms);
  EXPECT_EQ(options.headers, (OtlpKeyValues{{"b", "2"}}));
  EXPECT_TRUE(options.gzip);
}

TEST(OtlpOptions, HeadersAreKeyValuePairsWithPercentEscapes) {
  auto options = resolve_ok({{"OTEL_EXPORTER_OTLP_HEADERS",
                              " Authorization=Basic%20dXNlcjpwYXNz , x-tenant = team%2Ca "}});
  EXPECT_EQ(options.headers,
            (OtlpKeyValues{{"Authorization", "Basic dXNlcjpwYXNz"}, {"x-tenant", "team,a"}}));
}

TEST(OtlpOptions, HeadersWithLineBreaksOrNulAreRefused) {
  for (std::string headers : {"Authorization=Basic%20a%0D%0AX-Evil:%201", "x%0Ay=1", "a=b%00c"}) {
    Error error = resolve_error({{"OTEL_EXPORTER_OTLP_HEADERS", headers}});
    EXPECT_EQ(error.kind, ErrorKind::kBadInput);
    EXPECT_NE(error.message().find("CR, LF or NUL"), std::string::npos) << error.message();
    EXPECT_EQ(error.message().find_first_of("\r\n"), std::string::npos);
  }
}

TEST(OtlpOptions, TlsSettingsWithAPlainHttpEndpointAreRefused) {
  for (const char* variable :
       {"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE"}) {
    Error error = resolve_error({{variable, "/etc/ssl/ca.pem"}},
                                {.enabled = true, .endpoint = "http://collector:4318"});
    EXPECT_EQ(error.kind, ErrorKind::kBadInput);
    EXPECT_NE(error.message().find("in clear"), std::string::npos) << error.message();
  }
  Error client = resolve_error({{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/etc/ssl/c.pem"},
                                {"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/etc/ssl/c.key"}},
                               {.enabled = true, .endpoint = "http://collector:4318"});
  EXPECT_NE(client.message().find("in clear"), std::string::npos) << client.message();
  // https:// with the same settings is fine.
  auto options = resolve_ok({{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ssl/ca.pem"}},
                            {.enabled = true, .endpoint = "https://collector:4318"});
  EXPECT_TRUE(options.tls.enabled);
}

TEST(OtlpOptions, IntervalTemporalityAndServiceName) {
  auto options = resolve_ok(
      {{"OTEL_METRIC_EXPORT_INTERVAL", "1500"},
       {"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "LowMemory"},
       {"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=prod"}});
  EXPECT_EQ(options.export_interval, 1500ms);
  EXPECT_EQ(options.temporality, OtlpTemporality::kDelta);
  EXPECT_EQ(options.service_name, "from-attrs");
  EXPECT_EQ(options.resource_attributes,
            (OtlpKeyValues{{"service.name", "from-attrs"}, {"deployment.environment", "prod"}}));
  auto named = resolve_ok(
      {{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs"}, {"OTEL_SERVICE_NAME", "checkout"}});
  EXPECT_EQ(named.service_name, "checkout");
}

TEST(OtlpOptions, BadValuesAreBadInputNamingTheSource) {
  struct Case {
    EnvironmentMap env;
    OtlpCliValues cli;
    std::string mentions;
  };
  std::vector<Case> cases = {
      {{{"OTEL_EXPORTER_OTLP_PROTOCOL", "udp"}}, {.enabled = true}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
      {{{"OTEL_EXPORTER_OTLP_TIMEOUT", "ten"}}, {.enabled = true}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
      {{{"OTEL_EXPORTER_OTLP_COMPRESSION", "br"}},
       {.enabled = true},
       "OTEL_EXPORTER_OTLP_COMPRESSION"},
      {{{"OTEL_METRIC_EXPORT_INTERVAL", "0"}}, {.enabled = true}, "OTEL_METRIC_EXPORT_INTERVAL"},
      {{{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"}},
       {.enabled = true},
       "OTEL_EXPORTER_OTLP_HEADERS"},
      {{{"OTEL_EXPORTER_OTLP_HEADERS", "a=%zz"}}, {.enabled = true}, "OTEL_EXPORTER_OTLP_HEADERS"},
      {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x"}},
       {.enabled = true},
       "OTEL_EXPORTER_OTLP_ENDPOINT"},
      {{}, {.enabled = true, .temporality = "sometimes"}, "--otlp-temporality"},
      {{}, {.enabled = true, .histogram = "linear"}, "--otlp-histogram"},
      // A target swallowed as the optional URL: says how to avoid it.
      {{}, {.enabled = true, .endpoint = "target-app:slow_op"}, "--otlp=URL"},
  };
  for (const auto& c : cases) {
    auto error = resolve_error(c.env, c.cli);
    EXPECT_EQ(error.kind, ErrorKind::kBadInput) << error.message();
    EXPECT_NE(error.message().find(c.mentions), std::string::npos) << error.message();
  }
}

TEST(OtlpOptions, ParsesTheProcessEnvironment) {
  setenv("FUNCLATENCY_OTLP_TEST_VARIABLE", "a=b", 1);
  auto env = current_environment();
  EXPECT_EQ(env["FUNCLATENCY_OTLP_TEST_VARIABLE"], "a=b");
  unsetenv("FUNCLATENCY_OTLP_TEST_VARIABLE");
}

}  // namespace
}  // namespace funclatency
