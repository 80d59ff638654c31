// The span grammar (cli/span_option): what each point means, and one clear
// refusal for each malformed span.
#include "cli/span_option.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "cli/config.h"

namespace funclatency {
namespace {

TEST(SpanOption, NginxRequestIsMatchedByValue) {
  auto span = parse_span(
      "request=/usr/sbin/nginx:ngx_http_create_request:ret -> ngx_http_free_request:arg0");
  ASSERT_TRUE(span) << span.error().message();
  EXPECT_EQ(span->name, "request");
  EXPECT_EQ(span->start.binary, "/usr/sbin/nginx");
  EXPECT_EQ(span->start.function, "ngx_http_create_request");
  EXPECT_TRUE(span->start.at_return);
  EXPECT_EQ(span->start.value, SpanValue::kReturnValue);
  EXPECT_EQ(span->end.binary, "/usr/sbin/nginx");  // the start's
  EXPECT_EQ(span->end.function, "ngx_http_free_request");
  EXPECT_FALSE(span->end.at_return);
  EXPECT_EQ(span->end.value, SpanValue::kArgument);
  EXPECT_EQ(span->end.arg_index, 0u);
  EXPECT_TRUE(span->by_value());
  EXPECT_FALSE(span->any_process);
}

TEST(SpanOption, ThreadSpanAcrossBinariesAndCxxNames) {
  auto span = parse_span("q=./app:ns::Queue::pop:entry -> libc:free:return");
  ASSERT_TRUE(span) << span.error().message();
  EXPECT_EQ(span->start.binary, "./app");
  EXPECT_EQ(span->start.function, "ns::Queue::pop");
  EXPECT_EQ(span->end.binary, "libc");
  EXPECT_EQ(span->end.function, "free");
  EXPECT_TRUE(span->end.at_return);
  EXPECT_FALSE(span->by_value());
}

TEST(SpanOption, AnyProcess) {
  auto span = parse_span("job=./a:submit:arg2 -> ./b:done:arg1 any-process");
  ASSERT_TRUE(span) << span.error().message();
  EXPECT_TRUE(span->any_process);
  EXPECT_EQ(span->start.arg_index, 2u);
  EXPECT_EQ(span->end.binary, "./b");
}

TEST(SpanOption, MalformedSpansAreRefusedWithAHint) {
  for (const char* text : {
           "./a:f:entry -> g:entry",                // no NAME
           "x=./a:f:entry",                         // no arrow
           "x=./a:f -> g:entry",                    // no point
           "x=./a:f:arg6 -> g:arg0",                // argument out of range
           "x=./a:f:ret -> g:entry",                // a value at one end only
           "x=./a:f:entry -> g:entry any-process",  // any-process by thread
           "x=./a:f*:entry -> g:entry",             // a pattern
           "x=f:entry -> g:entry",                  // no binary
           "x=./a:f:entry -> g:entry later",        // unknown option
           "a b=./a:f:entry -> g:entry",            // NAME with a space
       }) {
    auto span = parse_span(text);
    ASSERT_FALSE(span) << text;
    EXPECT_EQ(span.error().kind, ErrorKind::kBadInput) << text;
    EXPECT_NE(span.error().message().find("--span"), std::string::npos) << text;
  }
}

// One SPAN per --span: a TARGET after it stays a TARGET, and spans alone
// are a run.
TEST(SpanOption, CommandLineTakesOneSpanPerOption) {
  CLI::App app;
  CommandLine values;
  add_core_options(app, values, false);
  std::vector<std::string> args = {"--span", "a=./x:f:ret -> g:arg1", "./x:h", "--span",
                                   "b=./x:f:entry -> f:return"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  auto config = finish_config(values);
  ASSERT_TRUE(config) << config.error().message();
  ASSERT_EQ(config->spans.size(), 2u);
  EXPECT_EQ(config->spans[0].name, "a");
  EXPECT_EQ(config->spans[1].name, "b");
  EXPECT_EQ(config->targets, std::vector<std::string>{"./x:h"});
}

TEST(SpanOption, TwoSpansOfOneNameAreRefused) {
  CLI::App app;
  CommandLine values;
  add_core_options(app, values, false);
  std::vector<std::string> args = {"--span", "a=./x:f:entry -> g:entry", "--span",
                                   "a=./x:f:entry -> f:return"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  auto config = finish_config(values);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message().find("two spans are named a"), std::string::npos);
}

// Followed (--follow, --config): both points in the program the start
// names, as a followed program is named.
TEST(SpanOption, AFollowedSpanIsInItsProgram) {
  auto spans = spans_of({"job=/app/q:submit_job:arg0 -> complete_job:arg0",
                         "c=q:f:entry -> "
                         "f:return"},
                        true);
  ASSERT_TRUE(spans) << spans.error().message();
  EXPECT_EQ((*spans)[0].end.binary, "/app/q");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"job=app/q:f:arg0 -> g:arg0", "START names its program"},
      {"job=/app/q:f:arg0 -> /lib/libc.so.6:free:arg0", "END is in its START's program"},
  };
  for (const auto& [text, expected] : refused) {
    auto refusal = spans_of({text}, true);
    ASSERT_FALSE(refusal) << text;
    EXPECT_NE(refusal.error().message().find(expected), std::string::npos)
        << refusal.error().message();
  }
  EXPECT_TRUE(spans_of({"job=/app/q:f:arg0 -> /lib/libc.so.6:free:arg0"}, false));
}

}  // namespace
}  // namespace funclatency
