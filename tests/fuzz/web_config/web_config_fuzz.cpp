// libFuzzer target for what a hostile file or client hands the Prometheus
// endpoint: the web-config parser (YAML through yaml-cpp), the HTTP request
// head parser and the Basic-auth header (its base64 decoder, and the
// "Basic user:password" split, which must round-trip through an encoder
// of OpenSSL's). The first byte picks the parser; the rest is its input.
// Beyond not crashing, each result must keep the promises its header makes.
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/basic_auth.h"
#include "http/http_request.h"
#include "http/web_config.h"

using namespace funclatency;

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void fuzz_web_config(std::string_view text) {
  auto config = parse_web_config(text, "/etc/funclatency");
  if (!config) {
    check(config.error().kind == ErrorKind::kBadInput && !config.error().message().empty());
    return;
  }
  for (const auto& [user, hash] : config->basic_auth_users) {
    check(hash.size() == 60 && hash.starts_with("$2"));
    check(user.find(':') == std::string::npos);
  }
  for (const auto& [name, value] : config->headers) {
    check(value.find_first_of("\r\n") == std::string::npos && !name.empty());
  }
  if (config->tls) {
    check(!config->tls->cert_file.empty() || !config->tls->cert.empty());
    check(!config->tls->key_file.empty() || !config->tls->key.empty());
    check(config->tls->min_version <= config->tls->max_version);
    check(config->tls->cert_file.empty() || config->tls->cert_file.front() == '/');
  }
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void fuzz_request_head(std::string_view bytes) {
  size_t limit = bytes.empty() ? 1 : 1 + static_cast<unsigned char>(bytes.front()) * 4;
  std::string_view received = bytes.empty() ? bytes : bytes.substr(1);
  ParsedHead parsed = parse_request_head(received, limit);
  switch (parsed.status) {
    case HeadStatus::kIncomplete:
      check(received.size() < limit);
      break;
    case HeadStatus::kRejected:
      check(parsed.http_status == 400 || parsed.http_status == 431 || parsed.http_status == 505);
      break;
    case HeadStatus::kComplete: {
      const HttpRequest& request = parsed.request;
      check(request.head_size <= received.size() && request.head_size <= limit);
      check(!request.method.empty() && !request.target.empty());
      check(request.version == "HTTP/1.1" || request.version == "HTTP/1.0");
      int hosts = 0;
      for (const auto& [name, value] : request.headers) {
        check(!name.empty() && value.find_first_of("\r\n") == std::string::npos);
        check(name.find_first_of(" \t") == std::string::npos);   // no obs-fold, no "Name :"
        check(!equal_ignoring_case(name, "Transfer-Encoding"));  // any one is refused
        hosts += equal_ignoring_case(name, "Host");
      }
      check(hosts <= 1 && (hosts == 1 || request.version == "HTTP/1.0"));
      // Every line of an accepted head ends in CRLF: no bare CR or LF.
      std::string_view head = received.substr(0, request.head_size);
      check(head.ends_with("\r\n\r\n"));
      for (size_t i = 0; i < head.size(); i++) {
        if (head[i] == '\r') check(i + 1 < head.size() && head[i + 1] == '\n');
        if (head[i] == '\n') check(i > 0 && head[i - 1] == '\r');
      }
      check(request.path().size() <= request.target.size());
      break;
    }
  }
}

void fuzz_base64(std::string_view text) {
  std::string decoded;
  if (decode_base64(text, decoded)) check(decoded.size() <= text.size() * 3 / 4);
}

// What a client sends for `credentials`, encoded by OpenSSL, not by us.
std::string basic_header(const std::string& credentials) {
  std::string encoded(4 * ((credentials.size() + 2) / 3) + 1, '\0');
  int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                               reinterpret_cast<const unsigned char*>(credentials.data()),
                               static_cast<int>(credentials.size()));
  encoded.resize(static_cast<size_t>(length));
  return "Basic " + encoded;
}

void fuzz_basic_authorization(std::string_view header) {
  std::string user, password, again_user, again_password;
  // The input as credentials: what a client encodes comes back as sent.
  std::string raw(header);
  size_t colon = raw.find(':');
  check(parse_basic_authorization(basic_header(raw), again_user, again_password) ==
        (colon != std::string::npos));
  if (colon != std::string::npos) {
    check(again_user == raw.substr(0, colon) && again_password == raw.substr(colon + 1));
  }
  // The input as a header.
  if (!parse_basic_authorization(header, user, password)) {
    check(user.empty() && password.empty());
    return;
  }
  check(user.find(':') == std::string::npos);  // the user ends at the first colon
  check(user.size() + 1 + password.size() <= (header.size() - 6) * 3 / 4);
  check(parse_basic_authorization(basic_header(user + ":" + password), again_user, again_password));
  check(again_user == user && again_password == password);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      fuzz_web_config(input);
      break;
    case 1:
      fuzz_request_head(input);
      break;
    default:
      fuzz_base64(input);
      fuzz_basic_authorization(input);
      break;
  }
  return 0;
}
