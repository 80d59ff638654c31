// Differential libFuzzer target for the /metrics request-head parser: every
// head it accepts must read the same to a reference, Node's http_parser
// (Debian's libhttp-parser-dev), which many servers and proxies have used.
// Ours is stricter on purpose (any Transfer-Encoding, obs-fold, bare CR or
// LF, a missing Host are refused), so only its "complete" verdicts are
// compared: where the head ends, the method, target, version, every header
// field and value, and Content-Length. A disagreement there is a request
// that a proxy in front and this server would frame differently (smuggling).
#include <http_parser.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_request.h"

using namespace funclatency;

namespace {

// Names the broken promise's line before aborting.
#define check(condition)                                                          \
  do {                                                                            \
    if (!(condition)) {                                                           \
      std::fprintf(stderr, "disagreement: %s (line %d)\n", #condition, __LINE__); \
      std::abort();                                                               \
    }                                                                             \
  } while (false)

struct Reference {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  bool in_value = false;
  bool complete = false;
};

int on_url(http_parser* parser, const char* at, size_t length) {
  static_cast<Reference*>(parser->data)->url.append(at, length);
  return 0;
}

int on_field(http_parser* parser, const char* at, size_t length) {
  auto* seen = static_cast<Reference*>(parser->data);
  if (seen->headers.empty() || seen->in_value) seen->headers.emplace_back();
  seen->in_value = false;
  seen->headers.back().first.append(at, length);
  return 0;
}

int on_value(http_parser* parser, const char* at, size_t length) {
  auto* seen = static_cast<Reference*>(parser->data);
  seen->in_value = true;
  seen->headers.back().second.append(at, length);
  return 0;
}

int on_headers_complete(http_parser* parser) {
  static_cast<Reference*>(parser->data)->complete = true;
  http_parser_pause(parser, 1);  // the head is what is compared
  return 0;
}

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view received(reinterpret_cast<const char*>(data), size);
  ParsedHead ours = parse_request_head(received, 16 * 1024);
  if (ours.status != HeadStatus::kComplete) return 0;
  const HttpRequest& request = ours.request;
  for (const auto& [name, value] : request.headers) {
    // http_parser 2.9.4 takes any field whose name starts with these as the
    // field itself ("Transfer-Encodingx: x" as a Transfer-Encoding, and
    // refuses it beside a Content-Length): its quirk, not a framing a
    // client can use against this server, which reads the name as given.
    for (std::string_view known : {"transfer-encoding", "content-length"}) {
      if (name.size() > known.size() && lowercase(name).starts_with(known)) return 0;
    }
  }

  // The server answers 413 and closes past 64 KiB of body (HttpLimits), so
  // only lengths below that frame anything; http_parser refuses those near
  // 2^64 as overflowing.
  if (request.content_length > 64 * 1024) return 0;
  // http_parser allows spaces, not tabs, around a Content-Length (RFC 9110's
  // OWS is either): it refuses what this server reads as the same number.
  std::string head = lowercase(received.substr(0, request.head_size));
  for (size_t at = head.find("\r\ncontent-length:"); at != std::string::npos;
       at = head.find("\r\ncontent-length:", at + 1)) {
    std::string_view line(head.data() + at + 2, head.find("\r\n", at + 2) - at - 2);
    if (line.find('\t') != std::string_view::npos) return 0;
  }

  http_parser_settings settings{};
  settings.on_url = on_url;
  settings.on_header_field = on_field;
  settings.on_header_value = on_value;
  settings.on_headers_complete = on_headers_complete;
  http_parser parser{};
  http_parser_init(&parser, HTTP_REQUEST);
  Reference seen;
  parser.data = &seen;
  size_t parsed = http_parser_execute(&parser, &settings, received.data(), received.size());
  auto error = static_cast<http_errno>(parser.http_errno);
  if (error == HPE_INVALID_METHOD) {
    // A method token http_parser does not know (it lists methods): ours
    // accepts any token and answers 405 to all but GET and HEAD.
    return 0;
  }
  // Accepted by us: the reference reads the same head to its end.
  check(error == HPE_PAUSED && seen.complete);
  // Paused in on_headers_complete, http_parser stops on the blank line's
  // LF, one byte short of it.
  check(parsed + 1 == request.head_size && received[parsed] == '\n');
  check(http_method_str(static_cast<http_method>(parser.method)) == request.method);
  check(seen.url == request.target);
  check(request.version ==
        "HTTP/" + std::to_string(parser.http_major) + "." + std::to_string(parser.http_minor));
  check(seen.headers.size() == request.headers.size());
  for (size_t i = 0; i < seen.headers.size(); i++) {
    check(seen.headers[i].first == request.headers[i].first);
    check(trimmed(seen.headers[i].second) == request.headers[i].second);
  }
  // ULLONG_MAX: no Content-Length.
  uint64_t length = parser.content_length == UINT64_MAX ? 0 : parser.content_length;
  check(length == request.content_length);
  return 0;
}
