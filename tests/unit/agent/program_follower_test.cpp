// Which program a process runs, as the follower asks it (agent/
// program_follower.h): this test process, by its path and by its file name,
// and a path that names another file or nothing.
#include "agent/program_follower.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

namespace funclatency {
namespace {

std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

TEST(ProgramInProcess, KnowsItsOwnProgramByPathAndByName) {
  const std::string exe = own_executable();
  ASSERT_FALSE(exe.empty());
  const std::string root = "/proc/" + std::to_string(getpid()) + "/root";
  auto by_path = program_in_process(getpid(), exe);
  ASSERT_TRUE(by_path) << by_path.error().message();
  EXPECT_EQ(*by_path, root + exe);
  auto by_name = program_in_process(getpid(), exe.substr(exe.rfind('/') + 1));
  ASSERT_TRUE(by_name);
  EXPECT_EQ(*by_name, root + exe);
}

TEST(ProgramInProcess, AnotherFileOrNoneIsNotIt) {
  auto other = program_in_process(getpid(), "/bin/sh");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_value());
  auto missing = program_in_process(getpid(), "/no/such/program");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
  auto name = program_in_process(getpid(), "sh");
  ASSERT_TRUE(name);
  EXPECT_FALSE(name->has_value());
}

TEST(ProgramInProcess, AGoneProcessIsAnError) {
  // PIDs are at most 4194304 (PID_MAX_LIMIT).
  auto gone = program_in_process(4194304 + 1, "/bin/sh");
  EXPECT_FALSE(gone);
}

TEST(FollowFailure, EveryReasonHasAMetricName) {
  for (uint32_t i = 0; i < static_cast<uint32_t>(FollowFailure::kCount); i++) {
    EXPECT_NE(follow_failure_name(static_cast<FollowFailure>(i)), "unknown");
  }
}

}  // namespace
}  // namespace funclatency
