#include "common/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <utility>

namespace funclatency {
namespace {

bool is_open(int fd) {
  return fcntl(fd, F_GETFD) != -1;
}

int open_null() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

TEST(UniqueFd, ClosesWhenDestroyed) {
  int raw = open_null();
  ASSERT_GE(raw, 0);
  {
    UniqueFd fd(raw);
    EXPECT_TRUE(fd);
    EXPECT_EQ(fd.get(), raw);
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(UniqueFd, EmptyOrFailedHoldsNothing) {
  EXPECT_FALSE(UniqueFd());
  EXPECT_FALSE(UniqueFd(-1));
  EXPECT_EQ(UniqueFd().get(), -1);
}

TEST(UniqueFd, MoveHandsOverWithoutClosing) {
  int raw = open_null();
  UniqueFd first(raw);
  UniqueFd second(std::move(first));
  EXPECT_FALSE(first);
  EXPECT_EQ(second.get(), raw);
  UniqueFd third;
  third = std::move(second);
  EXPECT_EQ(third.get(), raw);
  EXPECT_TRUE(is_open(raw));
}

TEST(UniqueFd, AssignmentClosesWhatItHeld) {
  int old_raw = open_null();
  int new_raw = open_null();
  UniqueFd held(old_raw);
  held = UniqueFd(new_raw);
  EXPECT_FALSE(is_open(old_raw));
  EXPECT_EQ(held.get(), new_raw);
  held.reset();
  EXPECT_FALSE(is_open(new_raw));
  EXPECT_FALSE(held);
}

TEST(UniqueFd, ReleaseGivesItUpOpen) {
  int raw = open_null();
  int released = -1;
  {
    UniqueFd fd(raw);
    released = fd.release();
    EXPECT_FALSE(fd);
  }
  EXPECT_EQ(released, raw);
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

}  // namespace
}  // namespace funclatency
