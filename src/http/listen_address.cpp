#include "http/listen_address.h"

#include <charconv>

namespace funclatency {

namespace {

std::unexpected<Error> not_an_address(std::string_view text, std::string_view why) {
  return bad_input("--prometheus \"" + std::string(text) + "\": " + std::string(why),
                   "expected [ADDR:]PORT such as 9464, 0.0.0.0:9464 or [::1]:9464; for the "
                   "default address, write --prometheus after the TARGETs");
}

}  // namespace

std::string ListenAddress::to_string() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress address{std::string(kDefaultPrometheusHost), 0};
  std::string_view port_text = text;
  size_t colon = text.rfind(':');
  if (colon != std::string_view::npos) {
    std::string_view host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.starts_with('[')) {
      if (!host.ends_with(']') || host.size() < 3) {
        return not_an_address(text, "unbalanced brackets around the IPv6 address");
      }
      host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
      return not_an_address(text, "write an IPv6 address in brackets");
    }
    address.host = host.empty() ? "0.0.0.0" : std::string(host);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size()) {
    return not_an_address(text, "the port is not a number");
  }
  if (port > 65535) return not_an_address(text, "the port is above 65535");
  address.port = static_cast<uint16_t>(port);
  return address;
}

}  // namespace funclatency
