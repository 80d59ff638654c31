// Everything that decides what the OTLP exporter sends and where: resolved
// once, from the standard OTEL_* environment variables and the command line
// (the command line wins), into one immutable OtlpOptions.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/names_table.h"

namespace funclatency {

enum class OtlpProtocol { kHttpProtobuf, kHttpJson, kGrpc };
// Each protocol's words, as --otlp-protocol and OTEL_EXPORTER_OTLP_PROTOCOL
// take them.
inline constexpr NamedValue<OtlpProtocol> kOtlpProtocolNames[] = {
    {OtlpProtocol::kHttpProtobuf, "http/protobuf"},
    {OtlpProtocol::kHttpJson, "http/json"},
    {OtlpProtocol::kGrpc, "grpc"}};
static_assert(names_every_value(kOtlpProtocolNames, OtlpProtocol::kGrpc));
enum class OtlpHistogramKind { kExplicit, kExponential };
enum class OtlpTemporality { kCumulative, kDelta };

// Exponential backoff between attempts at one export; the delay before
// attempt n+1 is min(max_backoff, initial_backoff * multiplier^(n-1)),
// scaled by a random factor in [0.5, 1.5) so that many agents restarted
// together do not retry in step.
struct OtlpRetryPolicy {
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{5000};
  double multiplier = 1.5;
};

using OtlpKeyValues = std::vector<std::pair<std::string, std::string>>;

// Transport security as the SDKs read it: OTEL_EXPORTER_OTLP_[METRICS_]
// CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY and INSECURE. Files are read
// when the transport is made (otlp_tls.h), not here.
struct OtlpTlsOptions {
  // https://, or a gRPC endpoint given without a scheme unless INSECURE is true.
  bool enabled = false;
  std::string certificate_file;         // the CAs the receiver must chain to; empty: the system's
  std::string client_certificate_file;  // mutual TLS: both or neither
  std::string client_key_file;
};

struct OtlpOptions {
  // HTTP: the full URL requests are posted to (".../v1/metrics").
  // gRPC: scheme://host:port; https selects TLS.
  std::string endpoint;
  OtlpTlsOptions tls;
  OtlpProtocol protocol = OtlpProtocol::kHttpProtobuf;
  OtlpKeyValues headers;
  std::chrono::milliseconds timeout{10000};
  bool gzip = false;
  std::chrono::milliseconds export_interval{60000};
  OtlpTemporality temporality = OtlpTemporality::kCumulative;
  OtlpHistogramKind histogram = OtlpHistogramKind::kExplicit;
  bool pid_attribute = false;
  std::string service_name = "funclatency";
  OtlpKeyValues resource_attributes;  // OTEL_RESOURCE_ATTRIBUTES, in order
  OtlpRetryPolicy retry;
  // Requests waiting to be sent while the collector is slow or down; the
  // oldest is dropped (and counted) when a new one does not fit.
  std::size_t queue_capacity = 32;
};

// What the command line said; empty strings mean "not given".
struct OtlpCliValues {
  bool enabled = false;
  std::string endpoint;
  std::string protocol;
  std::string histogram;
  std::string temporality;
  bool pid_attribute = false;
};

using EnvironmentMap = std::map<std::string, std::string>;

// The environment as a map, for resolve_otlp_options (reads `environ`).
EnvironmentMap current_environment();

// Pure: the same inputs always give the same options. Unknown or malformed
// values are bad input naming the variable or option and what it accepts.
Result<OtlpOptions> resolve_otlp_options(const EnvironmentMap& env, const OtlpCliValues& cli);

// "k1=v1,k2=v2" with %XX escapes in keys and values, as in
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES.
Result<OtlpKeyValues> parse_otel_key_values(std::string_view text, std::string_view source);

std::string_view to_string(OtlpProtocol protocol);

}  // namespace funclatency
