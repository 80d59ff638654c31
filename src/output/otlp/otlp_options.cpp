#include "output/otlp/otlp_options.h"

#include <unistd.h>  // environ (_GNU_SOURCE)

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "common/text.h"

namespace funclatency {
namespace {

constexpr std::string_view kDefaultHttpEndpoint = "http://localhost:4318";
constexpr std::string_view kDefaultGrpcEndpoint = "http://localhost:4317";
constexpr std::string_view kMetricsPath = "/v1/metrics";

std::string lower(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Environment values: any ASCII white space around them goes.
std::string_view trim_value(std::string_view text) {
  return trim(text, kAsciiWhitespace);
}

// The metrics-specific variable wins over the general one, as in the SDKs.
std::optional<std::string> lookup(const EnvironmentMap& env, std::string_view metrics_name,
                                  std::string_view general_name = {}) {
  for (std::string_view name : {metrics_name, general_name}) {
    if (name.empty()) continue;
    auto it = env.find(std::string(name));
    if (it != env.end() && !trim_value(it->second).empty())
      return std::string(trim_value(it->second));
  }
  return std::nullopt;
}

Result<std::string> percent_decode(std::string_view text, std::string_view source) {
  std::string out;
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    auto hex = text.substr(i + 1, 2);
    auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
    if (hex.size() != 2 || ec != std::errc() || end != hex.data() + 2) {
      return bad_input(std::string(source) + ": bad %-escape in \"" + std::string(text) + "\"",
                       "write %XX with two hex digits");
    }
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

Result<std::chrono::milliseconds> parse_millis(const std::string& text, std::string_view source,
                                               bool allow_zero) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < (allow_zero ? 0 : 1)) {
    return bad_input(std::string(source) + "=" + text + " is not a valid duration",
                     "give a whole number of milliseconds");
  }
  return std::chrono::milliseconds(value);
}

Result<OtlpProtocol> parse_protocol(const std::string& text, std::string_view source) {
  if (auto protocol = value_in(kOtlpProtocolNames, lower(text))) return *protocol;
  return bad_input(std::string(source) + ": unknown protocol \"" + text + "\"",
                   "use http/protobuf, http/json or grpc");
}

Result<OtlpTemporality> parse_temporality(const std::string& text, std::string_view source) {
  auto value = lower(text);
  if (value == "cumulative") return OtlpTemporality::kCumulative;
  // "lowmemory" asks for delta on histograms and monotonic counters, which
  // is all this tool exports.
  if (value == "delta" || value == "lowmemory") return OtlpTemporality::kDelta;
  return bad_input(std::string(source) + ": unknown temporality \"" + text + "\"",
                   "use cumulative or delta");
}

bool is_port(std::string_view text) {
  return !text.empty() && text.size() <= 5 &&
         std::ranges::all_of(text, [](unsigned char c) { return std::isdigit(c); });
}

struct ParsedUrl {
  std::string scheme;
  bool scheme_given = false;  // false: "host:port", taken as http
  std::string authority;      // host[:port]
  std::string path;           // "" or starting with '/'
};

// Accepts scheme://host[:port][/path] and, for convenience, host:port.
Result<ParsedUrl> parse_endpoint(std::string_view text, std::string_view source) {
  ParsedUrl url;
  std::string_view rest = text;
  if (auto scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    url.scheme = lower(rest.substr(0, scheme_end));
    url.scheme_given = true;
    rest.remove_prefix(scheme_end + 3);
  } else {
    url.scheme = "http";
  }
  auto path_start = rest.find('/');
  url.authority = std::string(rest.substr(0, path_start));
  if (path_start != std::string_view::npos) url.path = std::string(rest.substr(path_start));
  auto hint = std::string(
      "give a URL such as http://localhost:4318; to use the default, write "
      "--otlp=URL or put --otlp after the targets");
  if (url.scheme != "http" && url.scheme != "https") {
    return bad_input(std::string(source) + ": \"" + std::string(text) + "\" is not an http(s) URL",
                     hint);
  }
  std::string_view authority = url.authority;
  if (authority.empty()) {
    return bad_input(std::string(source) + ": \"" + std::string(text) + "\" names no host", hint);
  }
  // A port, when there is one, is digits (an IPv6 literal is in brackets).
  auto bracket_end = authority.rfind(']');
  auto colon = authority.rfind(':');
  if (colon != std::string_view::npos &&
      (bracket_end == std::string_view::npos || colon > bracket_end) &&
      !is_port(authority.substr(colon + 1))) {
    return bad_input(std::string(source) + ": \"" + std::string(text) + "\" is not a URL", hint);
  }
  return url;
}

std::string join(const ParsedUrl& url) {
  return url.scheme + "://" + url.authority + url.path;
}

// The SDKs' rules: a signal-specific endpoint is used as given; the general
// one is a base to which /v1/metrics is appended (HTTP only). A URL given on
// the command line gets /v1/metrics when it has no path of its own. A gRPC
// endpoint without a scheme uses TLS unless `insecure` (the specification's
// OTEL_EXPORTER_OTLP_INSECURE); an HTTP one is plain http.
Result<std::string> resolve_endpoint(const EnvironmentMap& env, const OtlpCliValues& cli,
                                     OtlpProtocol protocol, bool insecure) {
  bool http = protocol != OtlpProtocol::kGrpc;
  auto with_scheme = [&](ParsedUrl url) {
    if (!http && !url.scheme_given && !insecure) url.scheme = "https";
    return url;
  };
  auto with_metrics_path = [&](ParsedUrl url, bool always) {
    url = with_scheme(std::move(url));
    if (http && (always || url.path.empty() || url.path == "/")) {
      while (!url.path.empty() && url.path.back() == '/') url.path.pop_back();
      url.path += kMetricsPath;
    }
    return join(url);
  };
  if (!cli.endpoint.empty()) {
    auto url = parse_endpoint(cli.endpoint, "--otlp");
    if (!url) return std::unexpected(url.error());
    return with_metrics_path(*url, false);
  }
  if (auto value = lookup(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) {
    auto url = parse_endpoint(*value, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    if (!url) return std::unexpected(url.error());
    return join(with_scheme(*url));
  }
  if (auto value = lookup(env, "OTEL_EXPORTER_OTLP_ENDPOINT")) {
    auto url = parse_endpoint(*value, "OTEL_EXPORTER_OTLP_ENDPOINT");
    if (!url) return std::unexpected(url.error());
    return with_metrics_path(*url, true);
  }
  auto url = parse_endpoint(http ? kDefaultHttpEndpoint : kDefaultGrpcEndpoint, "default");
  return with_metrics_path(*url, true);
}

Result<bool> parse_bool(const std::string& text, std::string_view source) {
  std::string value = lower(text);
  if (value == "true") return true;
  if (value == "false") return false;
  return bad_input(std::string(source) + ": \"" + text + "\" is not true or false");
}

// OTEL_EXPORTER_OTLP_[METRICS_]{CERTIFICATE,CLIENT_CERTIFICATE,CLIENT_KEY}.
Result<OtlpTlsOptions> resolve_tls(const EnvironmentMap& env, std::string_view endpoint) {
  OtlpTlsOptions tls;
  tls.enabled = endpoint.starts_with("https://");
  if (auto value =
          lookup(env, "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")) {
    tls.certificate_file = *value;
  }
  if (auto value = lookup(env, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
                          "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")) {
    tls.client_certificate_file = *value;
  }
  if (auto value =
          lookup(env, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY")) {
    tls.client_key_file = *value;
  }
  if (endpoint.starts_with("http://") &&
      (!tls.certificate_file.empty() || !tls.client_certificate_file.empty())) {
    return bad_input(std::string("OTEL_EXPORTER_OTLP_") +
                         (tls.certificate_file.empty() ? "CLIENT_CERTIFICATE" : "CERTIFICATE") +
                         " is set, but the endpoint " + std::string(endpoint) +
                         " is plain http://: the metrics and any headers would go in clear",
                     "use an https:// endpoint, or unset the TLS settings");
  }
  if (tls.client_certificate_file.empty() != tls.client_key_file.empty()) {
    return bad_input(tls.client_key_file.empty()
                         ? "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE is set without a key"
                         : "OTEL_EXPORTER_OTLP_CLIENT_KEY is set without a certificate",
                     "set both OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and "
                     "OTEL_EXPORTER_OTLP_CLIENT_KEY for mutual TLS");
  }
  return tls;
}

}  // namespace

EnvironmentMap current_environment() {
  EnvironmentMap env;
  for (char** entry = environ; entry && *entry; entry++) {
    std::string_view text(*entry);
    auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

std::string_view to_string(OtlpProtocol protocol) {
  return name_in(kOtlpProtocolNames, protocol, "?");
}

Result<OtlpKeyValues> parse_otel_key_values(std::string_view text, std::string_view source) {
  OtlpKeyValues pairs;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto item = trim_value(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string_view::npos || trim_value(item.substr(0, eq)).empty()) {
      return bad_input(std::string(source) + ": \"" + std::string(item) + "\" is not key=value",
                       "write key1=value1,key2=value2");
    }
    auto key = percent_decode(trim_value(item.substr(0, eq)), source);
    if (!key) return std::unexpected(key.error());
    auto value = percent_decode(trim_value(item.substr(eq + 1)), source);
    if (!value) return std::unexpected(value.error());
    pairs.emplace_back(std::move(*key), std::move(*value));
  }
  return pairs;
}

namespace {

// A header's name or value holding CR, LF or NUL (percent-decoded: "%0D%0A")
// would end the header line early and smuggle in another header.
Result<void> refuse_header_breaks(const OtlpKeyValues& headers) {
  for (const auto& [key, value] : headers) {
    for (const std::string* text : {&key, &value}) {
      constexpr std::string_view kBreaks("\r\n\0", 3);
      if (text->find_first_of(kBreaks) == std::string::npos) continue;
      std::string name = key;  // shown on one line
      std::replace_if(
          name.begin(), name.end(), [&](char c) { return kBreaks.find(c) != kBreaks.npos; }, '?');
      return bad_input(
          "OTEL_EXPORTER_OTLP_HEADERS: the header \"" + name + "\" holds a CR, LF or NUL byte",
          "a header name or value is one line; remove the %0D, %0A or %00");
    }
  }
  return {};
}

// The command line's value (`cli_value` of `option`) wins over the
// environment's (`env_value` of `variable`); neither keeps `into` as it is.
// A value `parse` refuses is bad input naming where it came from.
template <typename T>
Result<void> parse_cli_over_env(const std::string& cli_value, std::string_view option,
                                const std::optional<std::string>& env_value,
                                std::string_view variable,
                                Result<T> (*parse)(const std::string&, std::string_view), T& into) {
  if (cli_value.empty() && !env_value) return {};
  auto parsed = cli_value.empty() ? parse(*env_value, variable) : parse(cli_value, option);
  if (!parsed) return std::unexpected(parsed.error());
  into = *parsed;
  return {};
}

// --otlp-protocol wins over the environment; neither keeps the default.
Result<void> resolve_protocol(const EnvironmentMap& env, const OtlpCliValues& cli,
                              OtlpOptions& options) {
  return parse_cli_over_env(
      cli.protocol, "--otlp-protocol",
      lookup(env, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
      "OTEL_EXPORTER_OTLP_PROTOCOL", parse_protocol, options.protocol);
}

// Where requests go and how the connection is secured. The endpoint depends
// on the protocol, so that is resolved first.
Result<void> resolve_connection(const EnvironmentMap& env, const OtlpCliValues& cli,
                                OtlpOptions& options) {
  bool insecure = false;
  if (auto value =
          lookup(env, "OTEL_EXPORTER_OTLP_METRICS_INSECURE", "OTEL_EXPORTER_OTLP_INSECURE")) {
    auto parsed = parse_bool(*value, "OTEL_EXPORTER_OTLP_INSECURE");
    if (!parsed) return std::unexpected(parsed.error());
    insecure = *parsed;
  }
  auto endpoint = resolve_endpoint(env, cli, options.protocol, insecure);
  if (!endpoint) return std::unexpected(endpoint.error());
  options.endpoint = std::move(*endpoint);
  auto tls = resolve_tls(env, options.endpoint);
  if (!tls) return std::unexpected(tls.error());
  options.tls = std::move(*tls);
  return {};
}

// How each request is sent, and how often: environment only.
Result<void> resolve_request_settings(const EnvironmentMap& env, OtlpOptions& options) {
  if (auto value =
          lookup(env, "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")) {
    auto headers = parse_otel_key_values(*value, "OTEL_EXPORTER_OTLP_HEADERS");
    if (!headers) return std::unexpected(headers.error());
    if (auto framed = refuse_header_breaks(*headers); !framed) {
      return std::unexpected(framed.error());
    }
    options.headers = std::move(*headers);
  }
  if (auto value =
          lookup(env, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")) {
    auto timeout = parse_millis(*value, "OTEL_EXPORTER_OTLP_TIMEOUT", false);
    if (!timeout) return std::unexpected(timeout.error());
    options.timeout = *timeout;
  }
  if (auto value =
          lookup(env, "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")) {
    auto compression = lower(*value);
    if (compression != "gzip" && compression != "none") {
      return bad_input("OTEL_EXPORTER_OTLP_COMPRESSION: unknown compression \"" + *value + "\"",
                       "use gzip or none");
    }
    options.gzip = compression == "gzip";
  }
  if (auto value = lookup(env, "OTEL_METRIC_EXPORT_INTERVAL")) {
    auto interval = parse_millis(*value, "OTEL_METRIC_EXPORT_INTERVAL", false);
    if (!interval) return std::unexpected(interval.error());
    options.export_interval = *interval;
  }
  return {};
}

// What the metrics look like: temporality (the command line wins over the
// environment) and histogram kind (command line only).
Result<void> resolve_metric_shape(const EnvironmentMap& env, const OtlpCliValues& cli,
                                  OtlpOptions& options) {
  auto temporality = parse_cli_over_env(
      cli.temporality, "--otlp-temporality",
      lookup(env, "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"),
      "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", parse_temporality, options.temporality);
  if (!temporality) return temporality;

  if (!cli.histogram.empty()) {
    auto kind = lower(cli.histogram);
    if (kind == "explicit") {
      options.histogram = OtlpHistogramKind::kExplicit;
    } else if (kind == "exponential") {
      options.histogram = OtlpHistogramKind::kExponential;
    } else {
      return bad_input("--otlp-histogram: unknown kind \"" + cli.histogram + "\"",
                       "use explicit or exponential");
    }
  }
  return {};
}

Result<void> resolve_resource(const EnvironmentMap& env, OtlpOptions& options) {
  if (auto value = lookup(env, "OTEL_RESOURCE_ATTRIBUTES")) {
    auto attributes = parse_otel_key_values(*value, "OTEL_RESOURCE_ATTRIBUTES");
    if (!attributes) return std::unexpected(attributes.error());
    options.resource_attributes = std::move(*attributes);
  }
  // OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES.
  for (const auto& [key, value] : options.resource_attributes) {
    if (key == "service.name") options.service_name = value;
  }
  if (auto value = lookup(env, "OTEL_SERVICE_NAME")) options.service_name = *value;
  return {};
}

}  // namespace

// Each part in turn, in this order: the first error is the one reported.
Result<OtlpOptions> resolve_otlp_options(const EnvironmentMap& env, const OtlpCliValues& cli) {
  OtlpOptions options;
  if (auto done = resolve_protocol(env, cli, options); !done) return std::unexpected(done.error());
  if (auto done = resolve_connection(env, cli, options); !done) {
    return std::unexpected(done.error());
  }
  if (auto done = resolve_request_settings(env, options); !done) {
    return std::unexpected(done.error());
  }
  if (auto done = resolve_metric_shape(env, cli, options); !done) {
    return std::unexpected(done.error());
  }
  options.pid_attribute = cli.pid_attribute;
  if (auto done = resolve_resource(env, options); !done) return std::unexpected(done.error());
  return options;
}

}  // namespace funclatency
