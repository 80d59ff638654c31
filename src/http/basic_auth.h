// basic_auth_users of a web-config: checks a request's
// "Authorization: Basic ..." against bcrypt hashes (libcrypt). bcrypt is
// slow on purpose (tens of ms), so it runs on a worker thread of its own,
// never on the server's: a client guessing passwords cannot hold up a
// scrape. A verified user and password is remembered (as a SHA-256 digest,
// never in clear), so a scraper pays bcrypt once. An unknown user costs the
// same bcrypt as a known one (against a stand-in hash), so the time of a
// refusal does not say which users exist. Each client address has a queue
// of its own and the worker takes them in turn, so a client guessing
// passwords at full speed cannot keep another one from logging in.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "common/non_copyable.h"

namespace funclatency {

enum class AuthVerdict {
  kAllowed,
  kRefused,
  kPending,  // being checked: ask again (on_checked says when)
  kBusy,     // too many checks queued: try later
};

class BasicAuth : NonCopyable {
 public:
  // `on_checked` is called on the worker thread after each check finishes.
  explicit BasicAuth(std::map<std::string, std::string, std::less<>> users,
                     std::function<void()> on_checked = {});
  ~BasicAuth();

  bool enabled() const { return !users_.empty(); }
  // The verdict on `authorization` (the header's value) sent by `client`
  // (its address); allowed when no users are configured. Never waits for
  // bcrypt.
  AuthVerdict check(std::string_view authorization, std::string_view client = {});

 private:
  struct Job {
    std::string digest, password, hash;
    bool known_user = true;  // false: bcrypt for the time only, then refused
  };
  void work();
  // The next job, from the client whose turn it is; call with jobs queued.
  Job next_job();

  const std::map<std::string, std::string, std::less<>> users_;  // user -> bcrypt hash
  std::function<void()> on_checked_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::set<std::string> verified_, refused_, queued_;         // digests of user:password
  std::map<std::string, std::deque<Job>, std::less<>> jobs_;  // by client address
  std::deque<std::string> turns_;  // clients with jobs, in the order they are served
  size_t queued_jobs_ = 0;
  bool stopping_ = false;
  std::jthread worker_;  // started with the first job; last, so joined first
};

// Standard base64 (padding optional); false on any other character.
bool decode_base64(std::string_view text, std::string& decoded);

// An Authorization header's value, "Basic " (any case) then base64 of
// "user:password" (RFC 7617: the user ends at the first colon). False when
// it is not that.
bool parse_basic_authorization(std::string_view authorization, std::string& user,
                               std::string& password);

}  // namespace funclatency
