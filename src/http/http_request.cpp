// Parsing an HTTP/1.x request head (RFC 9112) strictly enough for a metrics
// endpoint: one request line, field lines, CRLF line ends only, no obsolete
// line folding, no Transfer-Encoding, one Host: whatever two parsers could
// frame differently is refused with 400 rather than guessed at.
#include "http/http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/text.h"

namespace funclatency {

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// RFC 9110 tchar: what a method or a field name may hold.
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool has_control_bytes(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
  });
}

ParsedHead rejected(int status, std::string problem) {
  ParsedHead parsed;
  parsed.status = HeadStatus::kRejected;
  parsed.http_status = status;
  parsed.problem = std::move(problem);
  return parsed;
}

// Splits a head whose lines all end in CRLF (find_head_end checked).
std::vector<std::string_view> split_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (true) {
    size_t end = head.find("\r\n");
    lines.push_back(head.substr(0, end));
    if (end == std::string_view::npos) break;
    head.remove_prefix(end + 2);
  }
  return lines;
}

// Where the head that starts at `start` ends: the offset of its "\r\n\r\n",
// npos while it has not arrived. Every line must end in CRLF; a bare LF or a
// bare CR is refused, since another parser in front of this one (a proxy)
// may frame it differently: the shape of request smuggling.
struct HeadEnd {
  size_t end = std::string_view::npos;
  const char* problem = nullptr;  // set: refuse with 400
};

HeadEnd find_head_end(std::string_view received, size_t start) {
  for (size_t i = start; i < received.size(); i++) {
    if (received[i] == '\n') return {.problem = "bare LF in the request head"};
    if (received[i] != '\r') continue;
    if (i + 1 == received.size()) break;  // its LF has not arrived yet
    if (received[i + 1] != '\n') return {.problem = "bare CR in the request head"};
    if (received.substr(i + 2).starts_with("\r\n")) return {.end = i};
    i++;  // past the LF
  }
  return {};
}

// RFC 9112 3.2: origin-form ("/metrics"), absolute-form ("http://h/metrics")
// or asterisk-form ("*"); authority-form is CONNECT's, not served here. Found
// by the differential fuzzer: "metrics" (no slash) was taken as a target,
// where http_parser, and proxies built on it, refuse it.
// Its bytes are visible ASCII: a byte above 0x7e (UTF-8 not percent-encoded)
// is refused as http_parser refuses it.
bool is_request_target(std::string_view target) {
  for (char c : target) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte > 0x7e || c == '#') return false;  // no fragment in a request
  }
  if (target.starts_with('/') || target == "*") return true;
  size_t scheme_end = target.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return false;
  // A scheme of letters alone ("http"), as http_parser wants it; RFC 3986
  // would allow digits, "+", "-" and "." too, which no scraper sends.
  std::string_view scheme = target.substr(0, scheme_end);
  if (!std::all_of(scheme.begin(), scheme.end(),
                   [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; })) {
    return false;
  }
  // The authority: a host name or address (no user information), then
  // maybe ":" and digits.
  std::string_view authority = target.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?"));
  std::string_view host = authority, port;
  if (authority.starts_with('[')) {  // an IPv6 literal
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != host.npos) {
      return false;
    }
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return false;
    port = rest.empty() ? rest : rest.substr(1);
  } else {
    size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
        })) {
      return false;
    }
  }
  return port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0;
         });
}

ParsedHead parse_request_line(std::string_view line) {
  ParsedHead parsed;
  size_t first = line.find(' ');
  size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) {
    return rejected(400, "malformed request line");
  }
  HttpRequest& request = parsed.request;
  request.method = line.substr(0, first);
  request.target = line.substr(first + 1, last - first - 1);
  request.version = line.substr(last + 1);
  if (!is_token(request.method) || request.target.empty() ||
      request.target.find(' ') != std::string::npos || has_control_bytes(request.target)) {
    return rejected(400, "malformed request line");
  }
  if (!is_request_target(request.target)) return rejected(400, "malformed request target");
  if (!request.version.starts_with("HTTP/")) return rejected(400, "malformed request line");
  if (request.version != "HTTP/1.1" && request.version != "HTTP/1.0") {
    return rejected(505, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  parsed.status = HeadStatus::kComplete;
  return parsed;
}

// A whole head's framing: the body length only from one Content-Length, one Host.
// Any Transfer-Encoding is refused (empty, repeated or beside a Content-Length
// alike): a metrics endpoint needs no request body, and a head two parsers
// could frame differently must not be read at all.
ParsedHead check_framing(ParsedHead parsed) {
  HttpRequest& request = parsed.request;
  bool has_length = false;
  int hosts = 0;
  for (const auto& [field, value] : request.headers) {
    if (equal_ignoring_case(field, "Transfer-Encoding")) {
      return rejected(400, "Transfer-Encoding is not accepted");
    }
    if (equal_ignoring_case(field, "Host")) hosts++;
    if (!equal_ignoring_case(field, "Content-Length")) continue;
    // Even the same value twice (RFC 9112 6.3 allows either): http_parser
    // refuses it, so a proxy built on it and this server would part ways.
    if (has_length) return rejected(400, "more than one Content-Length");
    size_t length = 0;
    auto [end_of_number, error] =
        std::from_chars(value.data(), value.data() + value.size(), length);
    if (error != std::errc() || end_of_number != value.data() + value.size()) {
      return rejected(400, "bad Content-Length");
    }
    has_length = true;
    request.content_length = length;
  }
  if (hosts > 1) return rejected(400, "more than one Host header");
  if (hosts == 0 && request.version == "HTTP/1.1") return rejected(400, "HTTP/1.1 without Host");
  return parsed;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (equal_ignoring_case(field, name)) return value;
  }
  return {};
}

std::string_view HttpRequest::path() const {
  return std::string_view(target).substr(0, target.find('?'));
}

bool HttpRequest::keep_alive() const {
  std::string_view connection = header("Connection");
  if (version == "HTTP/1.0") return equal_ignoring_case(connection, "keep-alive");
  return !equal_ignoring_case(connection, "close");
}

ParsedHead parse_request_head(std::string_view received, size_t max_head_bytes) {
  // Empty lines before the request line are allowed (RFC 9112 2.2).
  size_t start = 0;
  while (received.substr(start).starts_with("\r\n")) start += 2;
  HeadEnd found = find_head_end(received.substr(0, max_head_bytes), start);
  if (found.problem) return rejected(400, found.problem);
  size_t end = found.end;
  if (end == std::string_view::npos) {
    if (received.size() >= max_head_bytes) return rejected(431, "request header too large");
    return {};
  }
  if (end + 4 > max_head_bytes) return rejected(431, "request header too large");

  auto lines = split_lines(received.substr(start, end - start));
  ParsedHead parsed = parse_request_line(lines.front());
  if (parsed.status != HeadStatus::kComplete) return parsed;
  HttpRequest& request = parsed.request;
  request.head_size = end + 4;
  for (size_t i = 1; i < lines.size(); i++) {
    std::string_view line = lines[i];
    // Obsolete line folding: a proxy may join the line to the last field or not.
    if (line.starts_with(' ') || line.starts_with('\t')) {
      return rejected(400, "folded header line (obs-fold)");
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return rejected(400, "malformed header field");
    }
    std::string_view value = trim(line.substr(colon + 1));
    if (has_control_bytes(value)) return rejected(400, "control character in a header field");
    request.headers.emplace_back(line.substr(0, colon), value);
  }
  return check_framing(std::move(parsed));
}

}  // namespace funclatency
