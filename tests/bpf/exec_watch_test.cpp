// The exec watch (probe/exec_watch.h) hears from the kernel the execs by a
// name it was given, with the file the new program's code is mapped from, and
// nothing of the others nor of a file it was told is known; its task iterator
// lists the processes already running: this test process among them, named
// by the same file as stat() names its executable.
#include "probe/exec_watch.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "bpf_permission.h"

extern char** environ;

namespace funclatency {
namespace {

// The kernel's s_dev (major << 20 | minor) and inode of a file, from stat().
FileId kernel_file_id(const char* path) {
  struct stat status {};
  if (stat(path, &status) != 0) return {};
  return {(static_cast<uint64_t>(major(status.st_dev)) << 20) | minor(status.st_dev),
          status.st_ino};
}

// Whether the watch hears process `pid` within a second.
bool heard(ExecWatch& watch, int pid, ProgramStart* found = nullptr) {
  for (int round = 0; round < 100; round++) {
    auto drained = watch.drain();
    if (!drained) return false;
    for (const auto& start : *drained) {
      if (start.pid != pid) continue;
      if (found) *found = start;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int spawn_and_wait(const char* program) {
  pid_t pid = 0;
  char* const argv[] = {const_cast<char*>(program), nullptr};
  if (posix_spawn(&pid, program, nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(ExecWatch, HearsAnExecWithTheFileOfItsCode) {
  FL_SKIP_WITHOUT_BPF();
  auto watch = ExecWatch::start();
  ASSERT_TRUE(watch) << watch.error().message();
  ASSERT_TRUE((*watch)->set_names({"true"}));
  const int pid = spawn_and_wait("/bin/true");
  ASSERT_GT(pid, 0);
  ProgramStart start;
  ASSERT_TRUE(heard(**watch, pid, &start)) << "exec of /bin/true (pid " << pid << ") not heard";
  ASSERT_TRUE(start.file.has_value());
  EXPECT_EQ(*start.file, kernel_file_id("/bin/true"));
  EXPECT_NE(start.cgroup_id, 0u);
  EXPECT_FALSE(start.held);
  EXPECT_EQ((*watch)->dropped(), 0u);
}

TEST(ExecWatch, HearsNothingOfOtherNamesNorOfKnownFiles) {
  FL_SKIP_WITHOUT_BPF();
  auto watch = ExecWatch::start();
  ASSERT_TRUE(watch) << watch.error().message();
  ASSERT_TRUE((*watch)->set_names({"false"}));
  const uint64_t skipped = (*watch)->skipped();
  const int other = spawn_and_wait("/bin/true");
  EXPECT_FALSE(heard(**watch, other)) << "no name of /bin/true was given";
  EXPECT_GT((*watch)->skipped(), skipped);
  // Named again, then known: not heard either.
  ASSERT_TRUE((*watch)->set_names({"true"}));
  ASSERT_TRUE((*watch)->know(kernel_file_id("/bin/true")));
  EXPECT_FALSE(heard(**watch, spawn_and_wait("/bin/true"))) << "a known file";
  (*watch)->forget_known();
  EXPECT_TRUE(heard(**watch, spawn_and_wait("/bin/true")));
}

// A file judged in one mount namespace hides its execs there only: another
// namespace may reach it by the path a target follows.
TEST(ExecWatch, AFileKnownInAnotherMountNamespaceIsHeard) {
  FL_SKIP_WITHOUT_BPF();
  auto watch = ExecWatch::start();
  ASSERT_TRUE(watch) << watch.error().message();
  ASSERT_TRUE((*watch)->set_names({"true"}));
  ProgramStart start;
  const int pid = spawn_and_wait("/bin/true");
  ASSERT_TRUE(heard(**watch, pid, &start));
  ASSERT_TRUE(start.file.has_value());
  EXPECT_NE(start.mnt_ns, 0u);
  ASSERT_TRUE((*watch)->know_in(*start.file, start.mnt_ns + 1));
  EXPECT_TRUE(heard(**watch, spawn_and_wait("/bin/true"))) << "known in another namespace";
  ASSERT_TRUE((*watch)->know_in(*start.file, start.mnt_ns));
  EXPECT_FALSE(heard(**watch, spawn_and_wait("/bin/true"))) << "known in this namespace";
}

// --follow-hold: the exec stops the process until release(), and the guard
// process lets it go at the bound when nobody does.
TEST(ExecWatch, HoldsAProcessUntilReleasedOrItsBound) {
  FL_SKIP_WITHOUT_BPF();
  auto watch = ExecWatch::start(std::chrono::milliseconds(300));
  ASSERT_TRUE(watch) << watch.error().message();
  ASSERT_TRUE((*watch)->set_names({"true"}));
  for (const bool released : {true, false}) {
    pid_t pid = 0;
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    const auto spawned = std::chrono::steady_clock::now();
    ASSERT_EQ(posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
    ASSERT_TRUE(WIFSTOPPED(status)) << "not held: status " << status;
    ProgramStart start;
    ASSERT_TRUE(heard(**watch, pid, &start));
    EXPECT_TRUE(start.held);
    if (released) (*watch)->release(pid);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    const auto held = std::chrono::steady_clock::now() - spawned;
    if (released) {
      EXPECT_LT(held, std::chrono::milliseconds(250)) << "released, not let go at the bound";
    } else {
      EXPECT_GE(held, std::chrono::milliseconds(290)) << "let go before the bound";
      EXPECT_LT(held, std::chrono::seconds(5));
    }
  }
}

TEST(ExecWatch, ListsTheProcessesRunningNow) {
  FL_SKIP_WITHOUT_BPF();
  auto watch = ExecWatch::start();
  ASSERT_TRUE(watch) << watch.error().message();
  auto running = (*watch)->running();
  ASSERT_TRUE(running) << running.error().message();
  auto self = std::find_if(running->begin(), running->end(),
                           [](const auto& s) { return s.pid == getpid(); });
  ASSERT_NE(self, running->end());
  ASSERT_TRUE(self->file.has_value());
  EXPECT_EQ(*self->file, kernel_file_id("/proc/self/exe"));
  // One record a process: no thread of it is listed apart.
  EXPECT_EQ(std::count_if(running->begin(), running->end(),
                          [](const auto& s) { return s.pid == getpid(); }),
            1);
  EXPECT_GT(running->size(), 5u);  // init, this shell's ancestors, kernel-less tasks left out
}

}  // namespace
}  // namespace funclatency
