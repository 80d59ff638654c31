// Paths through /proc/PID/root: split off the root, and symlinks resolved
// inside a root directory as its process would (a temporary directory plays
// the container's root), never in ours.
#include "symbols/proc_root_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/unique_fd.h"

namespace funclatency {
namespace {

namespace fs = std::filesystem;

TEST(SplitProcRoot, SplitsTheRootOffAPathThroughIt) {
  auto split = split_proc_root("/proc/1234/root/app/target-app");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->root, "/proc/1234/root");
  EXPECT_EQ(split->inside, "/app/target-app");

  split = split_proc_root("/proc/1234/task/1240/root/usr/lib/libfoo.so");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->root, "/proc/1234/task/1240/root");
  EXPECT_EQ(split->inside, "/usr/lib/libfoo.so");
}

TEST(SplitProcRoot, DropsEmptyAndDotComponentsAndKeepsDotDot) {
  auto split = split_proc_root("//proc/7/./root//usr/./lib/../lib64/");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->root, "/proc/7/root");
  EXPECT_EQ(split->inside, "/usr/lib/../lib64");
}

TEST(SplitProcRoot, TheRootItselfIsSlash) {
  for (const char* path : {"/proc/42/root", "/proc/42/root/"}) {
    auto split = split_proc_root(path);
    ASSERT_TRUE(split) << path;
    EXPECT_EQ(split->root, "/proc/42/root");
    EXPECT_EQ(split->inside, "/");
  }
}

TEST(SplitProcRoot, OtherPathsAreNotSplit) {
  for (const char* path :
       {"/usr/bin/app", "/proc/self/root/app", "/proc/12a/root/app", "/proc/1234/rootfs/app",
        "/proc/1234/cwd/app", "proc/1234/root/app", "/procs/1234/root/app", "/proc/1234",
        "/proc/1234/task/root/app", "/proc/1234/task/5/cwd/x", "/srv/proc/1/root/x", ""}) {
    EXPECT_FALSE(split_proc_root(path)) << path;
  }
}

// A root directory with the links a container's /usr/lib has.
class ResolveInRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fl-root-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "usr/lib/x");
    std::ofstream(root_ / "usr/lib/x/libfoo.so.1") << "library";
    fs::create_symlink("libfoo.so.1", root_ / "usr/lib/x/libfoo.so");          // relative
    fs::create_symlink("/usr/lib/x/libfoo.so.1", root_ / "usr/lib/x/abs.so");  // absolute
    fs::create_symlink("usr/lib", root_ / "lib");                              // a directory
    fs::create_symlink("../../../../../usr/lib/x/libfoo.so", root_ / "usr/lib/x/up.so");
    fs::create_symlink("/lib/x/abs.so", root_ / "usr/lib/x/chain.so");
    fs::create_symlink("loop-b", root_ / "loop-a");
    fs::create_symlink("loop-a", root_ / "loop-b");
    fd_.reset(open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string resolved(std::string_view inside) {
    auto path = resolve_in_root(fd_.get(), inside);
    if (!path) return "error: " + path.error().message();
    return *path;
  }

  fs::path root_;
  UniqueFd fd_;
};

TEST_F(ResolveInRoot, PlainPathsStayAsTheyAre) {
  EXPECT_EQ(resolved("/usr/lib/x/libfoo.so.1"), "/usr/lib/x/libfoo.so.1");
  EXPECT_EQ(resolved("/"), "/");
  EXPECT_EQ(resolved("/usr/./lib//x/../x/libfoo.so.1"), "/usr/lib/x/libfoo.so.1");
}

TEST_F(ResolveInRoot, FollowsSymlinksInsideTheRoot) {
  EXPECT_EQ(resolved("/usr/lib/x/libfoo.so"), "/usr/lib/x/libfoo.so.1");
  EXPECT_EQ(resolved("/lib/x/libfoo.so"), "/usr/lib/x/libfoo.so.1");
}

TEST_F(ResolveInRoot, AbsoluteTargetsAndDotDotStayInTheRoot) {
  // Resolved in our root, these would name a file that is not there.
  EXPECT_EQ(resolved("/usr/lib/x/abs.so"), "/usr/lib/x/libfoo.so.1");
  EXPECT_EQ(resolved("/usr/lib/x/chain.so"), "/usr/lib/x/libfoo.so.1");
  EXPECT_EQ(resolved("/usr/lib/x/up.so"), "/usr/lib/x/libfoo.so.1");
  EXPECT_EQ(resolved("/../../usr/lib/x/libfoo.so.1"), "/usr/lib/x/libfoo.so.1");
}

TEST_F(ResolveInRoot, MissingFilesAndLoopsAreErrorsWithTheirErrno) {
  auto missing = resolve_in_root(fd_.get(), "/usr/lib/x/libbar.so");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().errno_value, ENOENT);
  EXPECT_NE(missing.error().context.find("/usr/lib/x/libbar.so"), std::string::npos);
  auto loop = resolve_in_root(fd_.get(), "/loop-a");
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error().errno_value, ELOOP);
}

TEST_F(ResolveInRoot, RealPathKeepsTheProcRootPrefix) {
  // Our own root through /proc/PID/root: realpath() would answer without
  // the prefix; here it stays and only relative links are followed.
  const std::string through = "/proc/" + std::to_string(getpid()) + "/root" + root_.string();
  auto path = real_path(through + "/lib/x/libfoo.so");
  ASSERT_TRUE(path) << path.error().message();
  EXPECT_EQ(*path, through + "/usr/lib/x/libfoo.so.1");
  // An absolute link means the root's /usr/lib/x/libfoo.so.1, absent here.
  auto absolute = real_path(through + "/usr/lib/x/abs.so");
  ASSERT_FALSE(absolute);
  EXPECT_EQ(absolute.error().errno_value, ENOENT);
  // Any other path is realpath()'s.
  auto plain = real_path(root_.string() + "/lib/x/abs.so");
  ASSERT_FALSE(plain);
  EXPECT_EQ(real_path(root_.string() + "/lib/x/libfoo.so").value_or(""),
            root_.string() + "/usr/lib/x/libfoo.so.1");
}

TEST(RealPath, ANonexistentProcessRootIsAnError) {
  auto path = real_path("/proc/999999999/root/app/target-app");
  ASSERT_FALSE(path);
  EXPECT_EQ(path.error().errno_value, ENOENT);
  EXPECT_NE(path.error().context.find("/proc/999999999/root"), std::string::npos);
}

}  // namespace
}  // namespace funclatency
