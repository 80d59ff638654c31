// Parsing an HTTP/1.x request head (RFC 9112) strictly enough for a metrics
// endpoint: one request line, field lines, no obsolete line folding.
#include "output/prometheus/http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

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

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
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

// Splits "line\r\n" (a bare "\n" also ends a line, as most servers accept).
std::vector<std::string_view> split_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    size_t end = head.find('\n');
    std::string_view line = head.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    head.remove_prefix(end + 1);
  }
  return lines;
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
  if (!request.version.starts_with("HTTP/")) return rejected(400, "malformed request line");
  if (request.version != "HTTP/1.1" && request.version != "HTTP/1.0") {
    return rejected(505, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  parsed.status = HeadStatus::kComplete;
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
  while (start < received.size() && (received[start] == '\r' || received[start] == '\n')) start++;
  size_t end = received.find("\r\n\r\n", start);
  size_t terminator = 4;
  if (size_t bare = received.find("\n\n", start); bare != std::string_view::npos && bare < end) {
    end = bare;
    terminator = 2;
  }
  if (end == std::string_view::npos) {
    if (received.size() >= max_head_bytes) return rejected(431, "request header too large");
    return {};
  }
  if (end + terminator > max_head_bytes) return rejected(431, "request header too large");

  auto lines = split_lines(received.substr(start, end - start));
  if (lines.empty()) return rejected(400, "empty request");
  ParsedHead parsed = parse_request_line(lines.front());
  if (parsed.status != HeadStatus::kComplete) return parsed;
  HttpRequest& request = parsed.request;
  request.head_size = end + terminator;
  bool has_length = false;
  for (size_t i = 1; i < lines.size(); i++) {
    std::string_view line = lines[i];
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return rejected(400, "malformed header field");
    }
    std::string_view value = trim(line.substr(colon + 1));
    if (has_control_bytes(value)) return rejected(400, "control character in a header field");
    request.headers.emplace_back(line.substr(0, colon), value);
  }
  if (!request.header("Transfer-Encoding").empty()) {
    return rejected(501, "Transfer-Encoding is not supported");
  }
  for (const auto& [field, value] : request.headers) {
    if (!equal_ignoring_case(field, "Content-Length")) continue;
    size_t length = 0;
    auto [end_of_number, error] =
        std::from_chars(value.data(), value.data() + value.size(), length);
    if (error != std::errc() || end_of_number != value.data() + value.size() ||
        (has_length && length != request.content_length)) {
      return rejected(400, "bad Content-Length");
    }
    has_length = true;
    request.content_length = length;
  }
  return parsed;
}

}  // namespace funclatency
