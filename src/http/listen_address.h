// Where the HTTP server listens: `[ADDR:]PORT`, as `--prometheus` takes it
// (its defaults, and the option its messages name, are that endpoint's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace funclatency {

inline constexpr std::string_view kDefaultPrometheusHost = "127.0.0.1";
inline constexpr uint16_t kDefaultPrometheusPort = 9464;

struct ListenAddress {
  std::string host;   // a name or a numeric IPv4/IPv6 address, without brackets
  uint16_t port = 0;  // 0: any free port (the kernel picks one)

  // host:port, with brackets around an IPv6 address.
  std::string to_string() const;
};

// Accepts PORT (on 127.0.0.1, so nothing is exposed beyond the host unless
// asked), HOST:PORT, [IPV6]:PORT and :PORT (every interface, as in Go).
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace funclatency
