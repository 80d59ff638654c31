// Basic authentication against bcrypt hashes made by libcrypt here.
#include "output/prometheus/basic_auth.h"

#include <crypt.h>
#include <gtest/gtest.h>

namespace funclatency {
namespace {

std::string bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  return crypt_r(password.c_str(), salt, &data);
}

TEST(BasicAuth, ChecksUserAndPassword) {
  BasicAuth auth({{"alice", bcrypt("s3cret")}});
  ASSERT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.allows("Basic YWxpY2U6czNjcmV0"));   // alice:s3cret
  EXPECT_TRUE(auth.allows("Basic YWxpY2U6czNjcmV0"));   // remembered
  EXPECT_TRUE(auth.allows("basic YWxpY2U6czNjcmV0"));   // the scheme ignores case
  EXPECT_FALSE(auth.allows("Basic YWxpY2U6d3Jvbmc="));  // alice:wrong
  EXPECT_FALSE(auth.allows("Basic Ym9iOnMzY3JldA=="));  // bob:s3cret
  EXPECT_FALSE(auth.allows("Basic YWxpY2U="));          // no colon
  EXPECT_FALSE(auth.allows("Basic ***"));
  EXPECT_FALSE(auth.allows("Bearer YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(auth.allows(""));
}

TEST(BasicAuth, NoUsersAllowsEveryone) {
  BasicAuth auth({});
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.allows(""));
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
