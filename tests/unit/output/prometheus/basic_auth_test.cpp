// Basic authentication against bcrypt hashes made by libcrypt here; bcrypt
// runs on the checker's own thread, and guesses beyond its queue are
// turned away at once.
#include "output/prometheus/basic_auth.h"

#include <crypt.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace funclatency {
namespace {

std::string bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  return crypt_r(password.c_str(), salt, &data);
}

std::string basic(std::string_view credentials) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  for (size_t i = 0; i < credentials.size(); i += 3) {
    uint32_t bits = static_cast<uint8_t>(credentials[i]) << 16;
    if (i + 1 < credentials.size()) bits |= static_cast<uint8_t>(credentials[i + 1]) << 8;
    if (i + 2 < credentials.size()) bits |= static_cast<uint8_t>(credentials[i + 2]);
    for (size_t k = 0; k < 4; k++) {
      out += i + k <= credentials.size() ? kAlphabet[(bits >> (18 - 6 * k)) & 63] : '=';
    }
  }
  return out;
}

// The verdict once the worker is done (check() never waits for it).
AuthVerdict settled(BasicAuth& auth, const std::string& header) {
  for (int i = 0; i < 2000; i++) {
    AuthVerdict verdict = auth.check(header);
    if (verdict != AuthVerdict::kPending) return verdict;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return AuthVerdict::kPending;
}

// on_checked runs on the worker just after a verdict is published, so a
// caller that saw the verdict may still be ahead of it: wait for the count.
int settled_count(const std::atomic<int>& count, int want) {
  for (int i = 0; i < 2000 && count.load() < want; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return count.load();
}

TEST(BasicAuth, ChecksUserAndPasswordOffTheCallersThread) {
  std::atomic<int> checked = 0;
  BasicAuth auth({{"alice", bcrypt("s3cret")}}, [&] { checked++; });
  ASSERT_TRUE(auth.enabled());
  EXPECT_EQ(basic("alice:s3cret"), "Basic YWxpY2U6czNjcmV0");
  EXPECT_EQ(auth.check(basic("alice:s3cret")), AuthVerdict::kPending);
  EXPECT_EQ(settled(auth, basic("alice:s3cret")), AuthVerdict::kAllowed);
  EXPECT_EQ(settled_count(checked, 1), 1);
  EXPECT_EQ(auth.check("basic YWxpY2U6czNjcmV0"), AuthVerdict::kAllowed);  // remembered; any case
  EXPECT_EQ(settled(auth, basic("alice:wrong")), AuthVerdict::kRefused);
  EXPECT_EQ(auth.check(basic("alice:wrong")), AuthVerdict::kRefused);  // remembered too
  EXPECT_EQ(settled_count(checked, 2), 2);
  // Refused without bcrypt: unknown user, no colon, not base64, another scheme.
  for (const std::string& header : {basic("bob:s3cret"), basic("alice"), std::string("Basic ***"),
                                    std::string("Bearer YWxpY2U6czNjcmV0"), std::string()}) {
    EXPECT_EQ(auth.check(header), AuthVerdict::kRefused) << header;
  }
  EXPECT_EQ(checked.load(), 2);
}

TEST(BasicAuth, ManyGuessesAtOnceAreTurnedAwayNotQueued) {
  BasicAuth auth({{"alice", bcrypt("s3cret")}});
  int busy = 0;
  for (int i = 0; i < 40; i++) {
    if (auth.check(basic("alice:guess" + std::to_string(i))) == AuthVerdict::kBusy) busy++;
  }
  EXPECT_GE(busy, 30);  // at most 8 wait for the worker
}

TEST(BasicAuth, NoUsersAllowsEveryone) {
  BasicAuth auth({});
  EXPECT_FALSE(auth.enabled());
  EXPECT_EQ(auth.check(""), AuthVerdict::kAllowed);
}

TEST(BasicAuth, DecodesBase64) {
  std::string out;
  EXPECT_TRUE(decode_base64("YWxpY2U6czNjcmV0", out));
  EXPECT_EQ(out, "alice:s3cret");
  EXPECT_TRUE(decode_base64("YQ==", out));
  EXPECT_EQ(out, "a");
  EXPECT_TRUE(decode_base64("", out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(decode_base64("YQ=a", out));
  EXPECT_FALSE(decode_base64("Y", out));
  EXPECT_TRUE(decode_base64("YQ", out));  // padding may be left out
  EXPECT_EQ(out, "a");
  EXPECT_FALSE(decode_base64("a b", out));
}

}  // namespace
}  // namespace funclatency
