#include "output/otlp/otlp_transport.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace funclatency {
namespace {

using namespace std::chrono_literals;

TEST(OtlpRetryRules, HttpStatusClassification) {
  for (long status : {200L, 202L, 204L}) {
    EXPECT_EQ(classify_http_status(status), ExportOutcome::Status::kSuccess) << status;
  }
  for (long status : {429L, 502L, 503L, 504L}) {
    EXPECT_EQ(classify_http_status(status), ExportOutcome::Status::kRetryable) << status;
  }
  for (long status : {400L, 401L, 403L, 404L, 413L, 500L, 501L}) {
    EXPECT_EQ(classify_http_status(status), ExportOutcome::Status::kPermanent) << status;
  }
}

TEST(OtlpRetryRules, RetryAfterSecondsOrDate) {
  auto now = std::chrono::system_clock::from_time_t(1'700'000'000);
  EXPECT_EQ(parse_retry_after("3", now), std::optional(std::chrono::milliseconds(3000)));
  EXPECT_EQ(parse_retry_after(" 0 ", now), std::optional(std::chrono::milliseconds(0)));
  // 1700000000 is Tue, 14 Nov 2023 22:13:20 GMT.
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:13:30 GMT", now),
            std::optional(std::chrono::milliseconds(10'000)));
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:13:00 GMT", now),
            std::optional(std::chrono::milliseconds(0)));
  EXPECT_EQ(parse_retry_after("soon", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("-5", now), std::nullopt);
  // Capped: a receiver cannot park the exporter for good, nor overflow the clock.
  EXPECT_EQ(parse_retry_after("86400", now), std::optional(std::chrono::milliseconds(300'000)));
  EXPECT_EQ(parse_retry_after("9223372036854775807", now),
            std::optional(std::chrono::milliseconds(300'000)));
  EXPECT_EQ(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now),
            std::optional(std::chrono::milliseconds(300'000)));
}

TEST(OtlpRetryRules, BackoffGrowsIsCappedAndJittered) {
  OtlpRetryPolicy policy{
      .max_attempts = 10, .initial_backoff = 100ms, .max_backoff = 1000ms, .multiplier = 2.0};
  // random_unit 0.5 is the unjittered value.
  EXPECT_EQ(retry_delay(policy, 1, 0.5, std::nullopt), 100ms);
  EXPECT_EQ(retry_delay(policy, 2, 0.5, std::nullopt), 200ms);
  EXPECT_EQ(retry_delay(policy, 3, 0.5, std::nullopt), 400ms);
  EXPECT_EQ(retry_delay(policy, 8, 0.5, std::nullopt), 1000ms);
  EXPECT_EQ(retry_delay(policy, 1, 0.0, std::nullopt), 50ms);
  EXPECT_EQ(retry_delay(policy, 1, 0.999, std::nullopt), 149ms);
  // The server's hint wins when it asks for longer, never for shorter.
  EXPECT_EQ(retry_delay(policy, 1, 0.5, 3000ms), 3000ms);
  EXPECT_EQ(retry_delay(policy, 3, 0.5, 10ms), 400ms);
}

TEST(OtlpRetryRules, GzipRoundTrips) {
  std::string body;
  for (int i = 0; i < 1000; i++) body += "function_latency_ms " + std::to_string(i) + "\n";
  auto compressed = gzip_compress(body);
  ASSERT_TRUE(compressed.has_value());
  ASSERT_GE(compressed->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*compressed)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*compressed)[1]), 0x8b);
  EXPECT_LT(compressed->size(), body.size() / 4);

  z_stream stream{};
  ASSERT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  std::string out(body.size() + 16, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(compressed->data());
  stream.avail_in = static_cast<uInt>(compressed->size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  inflateEnd(&stream);
  EXPECT_EQ(out, body);
}

}  // namespace
}  // namespace funclatency
