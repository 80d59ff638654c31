// The HTTP request head parser: complete, incomplete and refused heads.
#include "output/prometheus/http_request.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(HttpRequestHead, ParsesAScrape) {
  std::string text =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\naccept:  text/plain  \r\n"
      "Content-Length: 3\r\n\r\nabcGET";
  ParsedHead parsed = parse_request_head(text, 1024);
  ASSERT_EQ(parsed.status, HeadStatus::kComplete);
  const HttpRequest& request = parsed.request;
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/metrics?x=1");
  EXPECT_EQ(request.path(), "/metrics");
  EXPECT_EQ(request.header("ACCEPT"), "text/plain");
  EXPECT_EQ(request.header("missing"), "");
  EXPECT_EQ(request.content_length, 3u);
  EXPECT_EQ(request.head_size, text.find("abc"));
  EXPECT_TRUE(request.keep_alive());
}

TEST(HttpRequestHead, WaitsForTheBlankLineWithinTheLimit) {
  EXPECT_EQ(parse_request_head("", 100).status, HeadStatus::kIncomplete);
  EXPECT_EQ(parse_request_head("GET / HTTP/1.1\r\nHost: a\r\n", 100).status,
            HeadStatus::kIncomplete);
  ParsedHead too_long = parse_request_head("GET / HTTP/1.1\r\nX: " + std::string(100, 'a'), 100);
  EXPECT_EQ(too_long.status, HeadStatus::kRejected);
  EXPECT_EQ(too_long.http_status, 431);
  ParsedHead ends_too_late =
      parse_request_head("GET / HTTP/1.1\r\nX: " + std::string(90, 'a') + "\r\n\r\n", 100);
  EXPECT_EQ(ends_too_late.http_status, 431);
}

TEST(HttpRequestHead, BareLineFeedsAndLeadingBlankLines) {
  ParsedHead parsed = parse_request_head("\r\nGET / HTTP/1.0\nConnection: keep-alive\n\n", 100);
  ASSERT_EQ(parsed.status, HeadStatus::kComplete);
  EXPECT_TRUE(parsed.request.keep_alive());
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.0\n\n", 100).request.keep_alive());
  EXPECT_FALSE(
      parse_request_head("GET / HTTP/1.1\nConnection: Close\n\n", 100).request.keep_alive());
}

TEST(HttpRequestHead, RefusesWhatItDoesNotServe) {
  auto status_of = [](std::string text) { return parse_request_head(text, 1000).http_status; };
  EXPECT_EQ(status_of("GET /\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("G(T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / FTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 501);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
}

}  // namespace
}  // namespace funclatency
