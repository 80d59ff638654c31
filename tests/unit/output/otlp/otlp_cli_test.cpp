#include "output/otlp/otlp_cli.h"

#include <gtest/gtest.h>

#include "otlp_test_receiver.h"
#include "otlp_test_reports.h"
#include "output/otlp/export_context.h"

namespace funclatency {
namespace {

// Parses argv with the OTLP options plus a positional TARGET, as main has.
struct Parsed {
  OtlpCliValues values;
  std::vector<std::string> targets;
  int duration = 0;
};

Parsed parse(std::vector<std::string> args) {
  Parsed parsed;
  CLI::App app;
  add_otlp_options(app, parsed.values);
  app.add_option("TARGET", parsed.targets);
  app.add_option("-d", parsed.duration);
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  app.parse(args);
  return parsed;
}

TEST(OtlpCli, OtlpAloneEnablesTheDefaultEndpoint) {
  auto parsed = parse({"--otlp", "-d", "2", "bin:fn"});
  EXPECT_TRUE(parsed.values.enabled);
  EXPECT_EQ(parsed.values.endpoint, "");
  EXPECT_EQ(parsed.targets, std::vector<std::string>{"bin:fn"});
  auto last = parse({"bin:fn", "--otlp"});
  EXPECT_TRUE(last.values.enabled);
  EXPECT_EQ(last.targets, std::vector<std::string>{"bin:fn"});
}

TEST(OtlpCli, OtlpTakesAnOptionalUrl) {
  auto equals = parse({"--otlp=http://collector:4318", "bin:fn"});
  EXPECT_EQ(equals.values.endpoint, "http://collector:4318");
  EXPECT_EQ(equals.targets, std::vector<std::string>{"bin:fn"});
  auto spaced = parse({"--otlp", "http://collector:4318", "bin:fn"});
  EXPECT_EQ(spaced.values.endpoint, "http://collector:4318");
  EXPECT_EQ(spaced.targets, std::vector<std::string>{"bin:fn"});
}

TEST(OtlpCli, OffWithoutTheFlagAndOtherOptionsParse) {
  EXPECT_FALSE(parse({"bin:fn"}).values.enabled);
  auto parsed = parse({"--otlp", "--otlp-protocol", "grpc", "--otlp-histogram", "exponential",
                       "--otlp-temporality", "delta", "--otlp-pid-attribute", "bin:fn"});
  EXPECT_EQ(parsed.values.protocol, "grpc");
  EXPECT_EQ(parsed.values.histogram, "exponential");
  EXPECT_EQ(parsed.values.temporality, "delta");
  EXPECT_TRUE(parsed.values.pid_attribute);
  EXPECT_THROW(parse({"--otlp-protocol", "udp", "bin:fn"}), CLI::ValidationError);
}

TEST(OtlpCli, MakeSinkRefusesBadInputAndDeliversGoodInput) {
  auto bad = make_otlp_sink({.enabled = true, .endpoint = "target-app:slow_op"}, {},
                            ExportContext{}, nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().exit_code(), 2);

  auto receiver = testing::start_http_receiver();
  ASSERT_TRUE(receiver);
  auto sink =
      make_otlp_sink({.enabled = true},
                     {{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                       "http://127.0.0.1:" + std::to_string(receiver->port()) + "/v1/metrics"},
                      {"OTEL_SERVICE_NAME", "cli-test"}},
                     detect_export_context(0), nullptr);
  ASSERT_TRUE(sink.has_value()) << sink.error().message();
  (*sink)->write(testing::sample_report());
  (*sink)->close();
  ASSERT_EQ(receiver->accepted_count(), 1u);
  auto received = receiver->received();
  const auto& resource = received.front().request.resource_metrics(0).resource();
  bool named = false;
  for (const auto& attribute : resource.attributes()) {
    named |= attribute.key() == "service.name" && attribute.value().string_value() == "cli-test";
  }
  EXPECT_TRUE(named);
  sink->reset();
}

}  // namespace
}  // namespace funclatency
