// HTTP Basic authentication (RFC 7617) against bcrypt hashes, as
// exporter-toolkit checks basic_auth_users, with bcrypt on a worker thread.
#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>
#include <cctype>
#include <memory>

namespace funclatency {

namespace {

// Remembered verdicts at most, each way; then that memory starts over.
constexpr size_t kMaxRemembered = 256;
// Checks waiting for the worker, from one client address and from all;
// more are answered kBusy.
constexpr size_t kMaxQueuedPerClient = 2;
constexpr size_t kMaxQueued = 64;

std::string digest_of(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  // crypt_rn (libxcrypt), not crypt_r: AddressSanitizer intercepts crypt_r
  // and, in a module loaded after it started, calls a null pointer.
  const char* computed = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (!computed || computed[0] == '*') return false;
  std::string_view result(computed);
  return result.size() == hash.size() &&
         CRYPTO_memcmp(result.data(), hash.data(), hash.size()) == 0;
}

}  // namespace

bool decode_base64(std::string_view text, std::string& decoded) {
  decoded.clear();
  uint32_t bits = 0;
  int held = 0;
  size_t padding = 0;
  for (char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z')
      value = c - 'A';
    else if (c >= 'a' && c <= 'z')
      value = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      value = c - '0' + 52;
    else if (c == '+')
      value = 62;
    else if (c == '/')
      value = 63;
    else if (c == '=') {
      padding++;
      continue;
    } else {
      return false;
    }
    if (padding > 0) return false;  // data after padding
    bits = (bits << 6) | static_cast<uint32_t>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      decoded.push_back(static_cast<char>((bits >> held) & 0xff));
    }
  }
  return padding <= 2 && (text.size() % 4 == 0 || padding == 0) && held < 6;
}

bool parse_basic_authorization(std::string_view authorization, std::string& user,
                               std::string& password) {
  user.clear();
  password.clear();
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); i++) {  // the scheme is case-insensitive
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i]))) {
      return false;
    }
  }
  std::string credentials;
  if (!decode_base64(authorization.substr(kScheme.size()), credentials)) return false;
  size_t colon = credentials.find(':');
  if (colon == std::string::npos) return false;
  user = credentials.substr(0, colon);
  password = credentials.substr(colon + 1);
  return true;
}

BasicAuth::BasicAuth(std::map<std::string, std::string, std::less<>> users,
                     std::function<void()> on_checked)
    : users_(std::move(users)), on_checked_(std::move(on_checked)) {}

BasicAuth::~BasicAuth() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // worker_ (a jthread) joins as the first member destroyed.
}

AuthVerdict BasicAuth::check(std::string_view authorization, std::string_view client) {
  if (users_.empty()) return AuthVerdict::kAllowed;
  std::string name, password;
  if (!parse_basic_authorization(authorization, name, password)) return AuthVerdict::kRefused;
  // An unknown user is checked against a known user's hash (the same cost)
  // and refused whatever the result: no faster than a wrong password.
  auto user = users_.find(name);
  const bool known = user != users_.end();
  const std::string& hash = known ? user->second : users_.begin()->second;
  std::string digest = digest_of(name + ":" + password);
  std::lock_guard lock(mutex_);
  if (verified_.contains(digest)) return AuthVerdict::kAllowed;
  if (refused_.contains(digest)) return AuthVerdict::kRefused;
  if (queued_.contains(digest)) return AuthVerdict::kPending;
  auto queue = jobs_.find(client);
  if (queued_jobs_ >= kMaxQueued ||
      (queue != jobs_.end() && queue->second.size() >= kMaxQueuedPerClient)) {
    return AuthVerdict::kBusy;
  }
  if (!worker_.joinable()) {
    try {
      worker_ = std::jthread([this] { work(); });
    } catch (const std::system_error&) {
      return AuthVerdict::kBusy;
    }
  }
  if (queue == jobs_.end()) {
    queue = jobs_.emplace(std::string(client), std::deque<Job>()).first;
    turns_.emplace_back(client);
  }
  queued_.insert(digest);
  queue->second.push_back({std::move(digest), std::move(password), hash, known});
  queued_jobs_++;
  wake_.notify_one();
  return AuthVerdict::kPending;
}

BasicAuth::Job BasicAuth::next_job() {
  std::string client = std::move(turns_.front());
  turns_.pop_front();
  auto queue = jobs_.find(client);
  Job job = std::move(queue->second.front());
  queue->second.pop_front();
  queued_jobs_--;
  if (queue->second.empty()) {
    jobs_.erase(queue);
  } else {
    turns_.push_back(std::move(client));  // its next job waits for the others' turns
  }
  return job;
}

void BasicAuth::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = next_job();
    lock.unlock();
    bool matches = bcrypt_matches(job.password, job.hash) && job.known_user;
    lock.lock();
    std::set<std::string>& verdicts = matches ? verified_ : refused_;
    if (verdicts.size() >= kMaxRemembered) verdicts.clear();
    verdicts.insert(job.digest);
    queued_.erase(job.digest);
    if (on_checked_) {
      lock.unlock();
      on_checked_();
      lock.lock();
    }
  }
}

}  // namespace funclatency
