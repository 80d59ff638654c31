// The exec watch (probe/exec_watch.h) hears every exec on the host from the
// kernel, with the file the new program's code is mapped from, and its task
// iterator lists the processes already running: this test process among them,
// named by the same file as stat() names its executable.
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
  const int pid = spawn_and_wait("/bin/true");
  ASSERT_GT(pid, 0);
  std::vector<ProgramStart> heard;
  for (int round = 0; round < 100; round++) {
    auto drained = (*watch)->drain();
    ASSERT_TRUE(drained) << drained.error().message();
    heard.insert(heard.end(), drained->begin(), drained->end());
    if (std::any_of(heard.begin(), heard.end(), [&](const auto& s) { return s.pid == pid; })) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto start =
      std::find_if(heard.begin(), heard.end(), [&](const auto& s) { return s.pid == pid; });
  ASSERT_NE(start, heard.end()) << "exec of /bin/true (pid " << pid << ") not heard";
  ASSERT_TRUE(start->file.has_value());
  EXPECT_EQ(*start->file, kernel_file_id("/bin/true"));
  EXPECT_NE(start->cgroup_id, 0u);
  EXPECT_EQ((*watch)->dropped(), 0u);
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
