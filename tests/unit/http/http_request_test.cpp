// The HTTP request head parser: complete, incomplete and refused heads.
#include "http/http_request.h"

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

TEST(HttpRequestHead, LeadingBlankLinesAndKeepAlive) {
  ParsedHead parsed =
      parse_request_head("\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 100);
  ASSERT_EQ(parsed.status, HeadStatus::kComplete);
  EXPECT_TRUE(parsed.request.keep_alive());
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.0\r\n\r\n", 100).request.keep_alive());
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n", 100)
                   .request.keep_alive());
}

// What a proxy in front may frame differently from this parser (request
// smuggling) is refused with 400, as soon as it is seen.
TEST(HttpRequestHead, RefusesWhatTwoParsersCouldFrameDifferently) {
  auto refusal = [](std::string text) {
    ParsedHead parsed = parse_request_head(text, 1000);
    return parsed.status == HeadStatus::kRejected ? parsed.http_status : 0;
  };
  const std::string get = "GET / HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(refusal(get + "Transfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refusal(get + "Transfer-Encoding:\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refusal(get + "Transfer-Encoding: \r\n\r\n"), 400);
  EXPECT_EQ(refusal(get + "transfer-encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(refusal(get + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(refusal(get + "X-A: a\r\n b\r\n\r\n"), 400);                            // obs-fold
  EXPECT_EQ(refusal(get + "X-A: a\r\n\tTransfer-Encoding: chunked\r\n\r\n"), 400);  // obs-fold
  EXPECT_EQ(refusal("GET / HTTP/1.1\nHost: a\n\n"), 400);                           // bare LF
  EXPECT_EQ(refusal(get + "X-A: a\n\r\n"), 400);                         // a head ending \n\r\n
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\rX-A: b\r\n\r\n"), 400);  // bare CR
  EXPECT_EQ(refusal("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\n\r\n"), 400);  // no Host
  EXPECT_EQ(refusal(get + "Host: b\r\n\r\n"), 400);   // two
  // Refused before the head is whole: no waiting for a deadline.
  EXPECT_EQ(refusal("GET / HTTP/1.1\nHost"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\rHost"), 400);
  // Still fine: HTTP/1.0 without Host, a CR that is the last byte so far.
  EXPECT_EQ(parse_request_head("GET / HTTP/1.0\r\n\r\n", 1000).status, HeadStatus::kComplete);
  EXPECT_EQ(parse_request_head(get + "\r", 1000).status, HeadStatus::kIncomplete);
  EXPECT_EQ(parse_request_head(get + "\r\n", 1000).status, HeadStatus::kComplete);
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
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
}

// Found by the differential fuzzer (tests/fuzz/http_head): heads this parser
// accepted and http_parser refuses, so a proxy built on it and this server
// would disagree about them. Now refused here too.
TEST(HttpRequestHead, RefusesWhatTheReferenceParserRefuses) {
  auto status_of = [](std::string text) { return parse_request_head(text, 1000).http_status; };
  const std::string host = " HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(status_of("GET metrics" + host + "\r\n"), 400);          // no origin-form
  EXPECT_EQ(status_of("GET /m\xc3\xa9trics" + host + "\r\n"), 400);  // not percent-encoded
  EXPECT_EQ(status_of("GET h2-x://a/m" + host + "\r\n"), 400);       // a scheme but letters
  EXPECT_EQ(status_of("GET http://a:94x4/m" + host + "\r\n"), 400);  // a port but digits
  EXPECT_EQ(status_of("GET http://a<b/m" + host + "\r\n"), 400);     // a host name's bytes
  EXPECT_EQ(status_of("GET /m#top" + host + "\r\n"), 400);           // a fragment
  EXPECT_EQ(status_of("GET /" + host + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n"), 400);
  // Still fine: origin-, absolute- and asterisk-form, a percent-encoded byte.
  for (std::string target :
       {"/m%C3%A9trics?x=1", "http://a:9464/metrics", "http://[::1]:9464/m", "HTTP://a", "*"}) {
    EXPECT_EQ(parse_request_head("GET " + target + host + "\r\n", 1000).status,
              HeadStatus::kComplete)
        << target;
  }
}

}  // namespace
}  // namespace funclatency
