#include <gtest/gtest.h>

#include "output/prometheus/listen_address.h"

namespace funclatency {
namespace {

TEST(ParseListenAddress, PortAloneStaysOnLoopback) {
  auto address = parse_listen_address("9464");
  ASSERT_TRUE(address);
  EXPECT_EQ(address->host, "127.0.0.1");
  EXPECT_EQ(address->port, 9464);
}

TEST(ParseListenAddress, HostAndPort) {
  auto v4 = parse_listen_address("0.0.0.0:9100");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "0.0.0.0");
  EXPECT_EQ(v4->port, 9100);
  auto name = parse_listen_address("localhost:0");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->host, "localhost");
  EXPECT_EQ(name->port, 0);
  auto v6 = parse_listen_address("[::1]:9464");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->to_string(), "[::1]:9464");
  auto every_interface = parse_listen_address(":9464");
  ASSERT_TRUE(every_interface);
  EXPECT_EQ(every_interface->host, "0.0.0.0");
}

TEST(ParseListenAddress, RejectsWhatIsNotAnAddress) {
  for (std::string_view bad : {"", "abc", "./target-app:slow_op", "127.0.0.1:", "127.0.0.1:65536",
                               "::1:9464", "[::1:9464", "9464x", "-1", "host:94 64"}) {
    auto address = parse_listen_address(bad);
    ASSERT_FALSE(address) << bad;
    EXPECT_EQ(address.error().exit_code(), 2) << bad;
    EXPECT_NE(address.error().message().find("[ADDR:]PORT"), std::string::npos);
  }
}

}  // namespace
}  // namespace funclatency
