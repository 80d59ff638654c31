// The endpoint over real HTTP on 127.0.0.1, binding errors, and the CLI glue.
#include "output/prometheus/prometheus_sink.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <thread>

#include "output/prometheus/exposition.h"
#include "output/prometheus/prometheus_cli.h"

namespace funclatency {
namespace {

constexpr std::string_view kPrometheusAccept =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

std::unique_ptr<PrometheusSink> start_on_any_port(std::string prefix = "ebpf") {
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", 0}, std::move(prefix));
  EXPECT_TRUE(sink) << (sink ? "" : sink.error().message());
  return sink ? std::move(*sink) : nullptr;
}

Report report_of(uint64_t calls) {
  Report report;
  FunctionReport function;
  function.symbol = "slow_op";
  function.binary = "/usr/bin/target-app";
  for (uint64_t i = 0; i < calls; i++) function.total.record(300000);  // 300 us
  report.functions.push_back(function);
  return report;
}

// A socket listening on an ephemeral loopback port, the way another server
// would hold it (no SO_REUSEPORT).
struct HeldPort {
  int fd = -1;
  uint16_t port = 0;
  HeldPort() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(fd, 1), 0);
    socklen_t length = sizeof address;
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
  }
  ~HeldPort() { close(fd); }
};

TEST(PrometheusSink, ServesMetadataBeforeTheFirstReport) {
  auto sink = start_on_any_port();
  ASSERT_TRUE(sink);
  ASSERT_NE(sink->port(), 0);
  EXPECT_EQ(sink->url(), "http://127.0.0.1:" + std::to_string(sink->port()) + "/metrics");
  httplib::Client client("127.0.0.1", sink->port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(response->body.find("# TYPE ebpf_function_latency_ms histogram"), std::string::npos);
  EXPECT_EQ(response->body.find("ebpf_function_latency_ms_bucket"), std::string::npos);
}

TEST(PrometheusSink, ServesTheLatestReportInTheFormatAskedFor) {
  auto sink = start_on_any_port();
  ASSERT_TRUE(sink);
  sink->write(report_of(3));
  sink->write(report_of(5));
  httplib::Client client("127.0.0.1", sink->port());
  auto text = client.Get("/metrics");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->body, render_exposition(report_of(5), ExpositionFormat::kPrometheusText, "ebpf"));
  auto open_metrics = client.Get("/metrics", {{"Accept", std::string(kPrometheusAccept)}});
  ASSERT_TRUE(open_metrics);
  EXPECT_EQ(open_metrics->get_header_value("Content-Type"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(open_metrics->body,
            render_exposition(report_of(5), ExpositionFormat::kOpenMetrics, "ebpf"));
  EXPECT_EQ(client.Get("/nothing-here")->status, 404);
}

TEST(PrometheusSink, ServesExemplarsOnlyInOpenMetrics) {
  auto sink = start_on_any_port();
  ASSERT_TRUE(sink);
  Report report = report_of(3);
  SlowCall call;
  call.duration_ns = 300000;
  call.pid = 7;
  call.tid = 8;
  call.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  report.functions[0].total_slowest = {call};
  sink->write(report);
  httplib::Client client("127.0.0.1", sink->port());
  auto text = client.Get("/metrics");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->body.find(" # {"), std::string::npos) << text->body;
  auto open_metrics = client.Get("/metrics", {{"Accept", std::string(kPrometheusAccept)}});
  ASSERT_TRUE(open_metrics);
  EXPECT_NE(open_metrics->body.find(R"(le="0.512"} 3 # {pid="7",tid="8"} 0.3 1700000000.000)"),
            std::string::npos)
      << open_metrics->body;
}

TEST(PrometheusSink, SeriesLeftOutOfTheLatestReportAreNoLongerServed) {
  // --by pid: process 11 exited; the report after the one that last listed
  // it does not list it, and neither does /metrics.
  auto sink = start_on_any_port();
  ASSERT_TRUE(sink);
  Report both = report_of(3);
  both.functions.push_back(both.functions[0]);
  both.functions[0].series.pid = 11;
  both.functions[1].series.pid = 12;
  Report survivor = both;
  survivor.functions.erase(survivor.functions.begin());
  httplib::Client client("127.0.0.1", sink->port());
  sink->write(both);
  auto before = client.Get("/metrics");
  ASSERT_TRUE(before);
  EXPECT_NE(before->body.find(R"(pid="11")"), std::string::npos);
  sink->write(survivor);
  auto after = client.Get("/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->body.find(R"(pid="11")"), std::string::npos) << after->body;
  EXPECT_NE(after->body.find(R"(ebpf_function_latency_ms_count{symbol="slow_op",)"
                             R"(binary="/usr/bin/target-app",pid="12"} 3)"),
            std::string::npos)
      << after->body;
}

TEST(PrometheusSink, ScrapesRunConcurrentlyWithWrites) {
  auto sink = start_on_any_port("custom");
  ASSERT_TRUE(sink);
  sink->write(report_of(1));
  std::atomic<bool> done = false;
  std::atomic<uint64_t> writes = 0;
  std::thread collector([&] {
    for (uint64_t calls = 1; !done; calls++) {
      sink->write(report_of(calls % 50));
      writes++;
    }
  });
  httplib::Client client("127.0.0.1", sink->port());
  for (int i = 0; i < 50; i++) {
    auto response = client.Get("/metrics", {{"Accept", "application/openmetrics-text"}});
    EXPECT_TRUE(response);
    if (!response) break;
    EXPECT_TRUE(response->body.ends_with("# EOF\n"));
    EXPECT_NE(response->body.find("custom_function_latency_ms_count{"), std::string::npos);
  }
  done = true;
  collector.join();
  EXPECT_GT(writes.load(), 50u);
}

TEST(PrometheusSink, ClosesPromptlyWithAKeptAliveConnection) {
  auto sink = start_on_any_port();
  ASSERT_TRUE(sink);
  uint16_t port = sink->port();
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  ASSERT_TRUE(client.Get("/metrics"));
  auto before = std::chrono::steady_clock::now();
  sink->close();
  sink->close();  // idempotent
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
  httplib::Client after("127.0.0.1", port);
  after.set_connection_timeout(std::chrono::milliseconds(500));
  EXPECT_FALSE(after.Get("/metrics"));
}

TEST(PrometheusSink, PortInUseIsBadInput) {
  HeldPort held;
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", held.port}, "ebpf");
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(sink.error().exit_code(), 2);
  EXPECT_EQ(sink.error().errno_value, EADDRINUSE);
  EXPECT_NE(sink.error().message().find("127.0.0.1:" + std::to_string(held.port)),
            std::string::npos)
      << sink.error().message();
}

TEST(PrometheusSink, SecondSinkOnTheSamePortIsRefused) {
  // httplib's default SO_REUSEPORT would let both listen and split scrapes.
  auto first = start_on_any_port();
  ASSERT_TRUE(first);
  auto second = PrometheusSink::serve(ListenAddress{"127.0.0.1", first->port()}, "ebpf");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().errno_value, EADDRINUSE);
}

TEST(PrometheusSink, AddressesThatCannotBeBoundAreBadInput) {
  // 192.0.2.1 is TEST-NET-1: not assigned to this host.
  for (const ListenAddress& address :
       {ListenAddress{"192.0.2.1", 0}, ListenAddress{"no-such-host.invalid", 9464}}) {
    auto sink = PrometheusSink::serve(address, "ebpf");
    ASSERT_FALSE(sink) << address.to_string();
    EXPECT_EQ(sink.error().exit_code(), 2) << address.to_string();
    EXPECT_NE(sink.error().message().find("--prometheus"), std::string::npos);
  }
}

TEST(PrometheusSink, BadPrefixIsBadInput) {
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", 0}, "my-app");
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().exit_code(), 2);
}

TEST(PrometheusSink, PasswordGuessesDoNotHoldUpAScrape) {
  // Cost 12: ~0.2 s of bcrypt per guess, were it on the server's thread.
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_NE(crypt_gensalt_rn("$2b$", 12, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  WebConfig web;
  web.basic_auth_users.emplace("alice", crypt_r("s3cret", salt, &data));
  auto sink = PrometheusSink::serve(ListenAddress{"127.0.0.1", 0}, "ebpf", web);
  ASSERT_TRUE(sink) << sink.error().message();
  uint16_t port = (*sink)->port();
  httplib::Client scraper("127.0.0.1", port);
  scraper.set_basic_auth("alice", "s3cret");
  scraper.set_read_timeout(std::chrono::seconds(5));
  auto first = scraper.Get("/metrics");  // pays bcrypt once
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  std::atomic<bool> done = false;
  std::atomic<int> refused = 0;
  std::vector<std::thread> guessers;
  for (int g = 0; g < 16; g++) {
    guessers.emplace_back([&, g] {
      httplib::Client guesser("127.0.0.1", port);
      for (int i = 0; !done; i++) {
        guesser.set_basic_auth("alice",
                               ("guess-" + std::to_string(g) + "-" + std::to_string(i)).c_str());
        auto answer = guesser.Get("/metrics");
        if (answer && (answer->status == 401 || answer->status == 503)) refused++;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 10; i++) {
    auto start = std::chrono::steady_clock::now();
    auto scrape = scraper.Get("/metrics");
    ASSERT_TRUE(scrape);
    EXPECT_EQ(scrape->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  }
  done = true;
  for (auto& guesser : guessers) guesser.join();
  EXPECT_GT(refused.load(), 16);
  auto wrong = httplib::Client("127.0.0.1", port).Get("/metrics");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(wrong->get_header_value("WWW-Authenticate"), "Basic");
}

struct ParsedCli {
  PrometheusCliValues values;
  std::vector<std::string> targets;
};

ParsedCli parse(std::vector<std::string> args) {
  CLI::App app;
  ParsedCli parsed;
  add_prometheus_options(app, parsed.values);
  app.add_option("TARGET", parsed.targets)->required();  // as funclatency's main has it
  std::reverse(args.begin(), args.end());                // CLI11 takes a reversed vector
  app.parse(args);
  return parsed;
}

TEST(PrometheusCli, OffUnlessAsked) {
  auto parsed = parse({"./target-app:slow_op"});
  EXPECT_EQ(parsed.targets, std::vector<std::string>{"./target-app:slow_op"});
  EXPECT_FALSE(parsed.values.enabled);
  auto sink = make_prometheus_sink(parsed.values);
  ASSERT_TRUE(sink);
  EXPECT_EQ(*sink, nullptr);
}

TEST(PrometheusCli, ValueIsOptional) {
  auto bare = parse({"--prometheus", "x:f"});
  EXPECT_TRUE(bare.values.enabled);
  EXPECT_EQ(bare.values.listen, "127.0.0.1:9464");
  auto before_option = parse({"--prometheus", "--prometheus-prefix", "app", "x:f"});
  EXPECT_EQ(before_option.values.listen, "127.0.0.1:9464");
  EXPECT_EQ(before_option.values.prefix, "app");
  EXPECT_EQ(before_option.targets, std::vector<std::string>{"x:f"});
  auto after_targets = parse({"x:f", "--prometheus"});
  EXPECT_EQ(after_targets.values.listen, "127.0.0.1:9464");
  auto with_port = parse({"--prometheus", "0.0.0.0:9100", "x:f", "y:g"});
  EXPECT_EQ(with_port.values.listen, "0.0.0.0:9100");
  EXPECT_EQ(with_port.targets, (std::vector<std::string>{"x:f", "y:g"}));
  EXPECT_EQ(with_port.values.prefix, "ebpf");
}

TEST(PrometheusCli, LeavesTheRequiredTargetAlone) {
  auto parsed = parse({"--prometheus", "./target-app:slow_op"});
  EXPECT_EQ(parsed.values.listen, "127.0.0.1:9464");
  EXPECT_EQ(parsed.targets, std::vector<std::string>{"./target-app:slow_op"});
}

TEST(PrometheusCli, BadAddressOrLonePrefixIsAParseError) {
  EXPECT_THROW(parse({"--prometheus", "host:port", "x:f"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--prometheus", "./a:f", "./b:g"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--prometheus-prefix", "x", "a:b"}), CLI::RequiresError);
}

TEST(PrometheusCli, MakesASinkThatServes) {
  auto parsed = parse({"--prometheus", "127.0.0.1:0", "--prometheus-prefix", "cli", "x:f"});
  auto sink = make_prometheus_sink(parsed.values);
  ASSERT_TRUE(sink) << sink.error().message();
  ASSERT_NE(*sink, nullptr);
  auto* prometheus = dynamic_cast<PrometheusSink*>(sink->get());
  ASSERT_NE(prometheus, nullptr);
  // Bound, not serving until started (after the privilege drop).
  auto started = (*sink)->start();
  ASSERT_TRUE(started) << started.error().message();
  (*sink)->write(report_of(2));
  httplib::Client client("127.0.0.1", prometheus->port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_NE(response->body.find("cli_function_latency_ms_count{symbol=\"slow_op\","),
            std::string::npos);
  (*sink)->close();
}

TEST(PrometheusCli, PortInUseIsBadInput) {
  HeldPort held;
  auto parsed = parse({"--prometheus", std::to_string(held.port), "x:f"});
  auto sink = make_prometheus_sink(parsed.values);
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().exit_code(), 2);
  EXPECT_NE(sink.error().message().find("Address already in use"), std::string::npos)
      << sink.error().message();
}

}  // namespace
}  // namespace funclatency
