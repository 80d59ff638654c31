// The frame-pointer fallback on a real Go stack: a Go program (go_fixture,
// with and without symbols and DWARF) blocks in a read under main.outer ->
// main.middle -> main.inner; the test stops the thread with ptrace, takes its
// registers and copies 16 KB of its stack from /proc/PID/mem, as the BPF
// side would, and resolves it. Then the same stack as an exit probe on
// main.inner's `ret` would see it, where rbp is already main.middle's: the
// immediate caller must not be skipped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bpf/funclatency.h"
#include "describe_frames.h"
#include "stacks/stack_resolver.h"

namespace funclatency {
namespace {

#ifdef GOSTACK_DIR

// The Go program, started with stdin and stdout on pipes; killed on exit.
class GoProgram {
 public:
  explicit GoProgram(const std::string& path) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      execl(path.c_str(), path.c_str(), nullptr);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    char text[6] = {};
    ready_ = read(out[0], text, 5) == 5 && std::string(text) == "ready";
    close(out[0]);
  }
  ~GoProgram() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdin_ >= 0) close(stdin_);
  }
  pid_t pid() const { return pid_; }
  bool ready() const { return ready_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  bool ready_ = false;
};

// True once the thread is blocked in read(0, ...): /proc's syscall file
// starts with the number of the system call it is in.
bool wait_for_read(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream syscall("/proc/" + std::to_string(pid) + "/syscall");
    std::string number;
    if (syscall >> number && number == "0") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

struct Stopped {
  UserRegisters regs{};
  std::vector<uint8_t> stack;
};

// Interrupts the thread (seized already), takes its registers and up to
// FL_STACK_BYTES of its stack, and lets it go.
bool copy_stack(pid_t tid, Stopped& stopped) {
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) return false;
  int status = 0;
  if (waitpid(tid, &status, __WALL) != tid) return false;
  user_regs_struct regs{};
  const bool got = ptrace(PTRACE_GETREGS, tid, nullptr, &regs) == 0;
  ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  if (!got) return false;
  stopped.regs = {regs.rip, regs.rsp, regs.rbp, regs.rbx, regs.r12, regs.r13, regs.r14, regs.r15};
  const int mem = open(("/proc/" + std::to_string(tid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) return false;
  stopped.stack.resize(FL_STACK_BYTES);
  // As bpf_probe_read_user would: whole pages until one cannot be read.
  size_t copied = 0;
  while (copied < stopped.stack.size()) {
    const uint64_t at = regs.rsp + copied;
    const size_t chunk = std::min<size_t>(stopped.stack.size() - copied, 4096 - at % 4096);
    if (pread(mem, stopped.stack.data() + copied, chunk, static_cast<off_t>(at)) !=
        static_cast<ssize_t>(chunk)) {
      break;
    }
    copied += chunk;
  }
  close(mem);
  stopped.stack.resize(copied);
  return copied > 0;
}

class GoStackTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoStackTest, FramePointersNameTheCallersOfAGoFunction) {
  const std::string path = std::string(GOSTACK_DIR) + "/" + GetParam();
  GoProgram program(path);
  ASSERT_TRUE(program.ready()) << path;
  ASSERT_TRUE(wait_for_read(program.pid()));
  Stopped stopped;
  if (ptrace(PTRACE_SEIZE, program.pid(), nullptr, nullptr) != 0) {
    GTEST_SKIP() << "cannot ptrace the child: " << std::strerror(errno);
  }
  ASSERT_TRUE(copy_stack(program.pid(), stopped));

  StackResolver resolver;
  StackSample sample;
  sample.pid = sample.tid = program.pid();
  sample.regs = stopped.regs;
  sample.stack = stopped.stack;
  const auto frames = resolver.resolve(sample);
  SCOPED_TRACE(describe(frames));
  // Below main.inner: syscall.Syscall and the runtime's system call code.
  const int inner = index_of(frames, "main.inner");
  ASSERT_GE(inner, 1);
  ASSERT_LT(static_cast<size_t>(inner) + 4, frames.size());
  EXPECT_EQ(frames[inner + 1].symbol, "main.middle");
  EXPECT_EQ(frames[inner + 2].symbol, "main.outer");
  EXPECT_EQ(frames[inner + 3].symbol, "main.main");
  EXPECT_EQ(frames[inner + 4].symbol, "runtime.main");
  for (int i = 0; i <= inner + 4; ++i) EXPECT_EQ(frames[i].binary, path) << "frame " << i;
  EXPECT_GT(index_of(frames, "syscall.Syscall"), -1);

  // At main.inner's `ret`: sp at the return address into main.middle, rbp
  // restored to main.middle's frame, ip in main.inner.
  const uint64_t into_middle = frames[inner + 1].address;
  uint64_t slot = 0;
  for (size_t offset = 8; offset + 8 <= stopped.stack.size(); offset += 8) {
    uint64_t value = 0;
    std::memcpy(&value, stopped.stack.data() + offset, 8);
    if (value == into_middle) {
      slot = offset;
      break;
    }
  }
  ASSERT_NE(slot, 0u);
  StackSample at_ret;
  at_ret.pid = at_ret.tid = program.pid();
  at_ret.at_ret = true;
  at_ret.regs = stopped.regs;
  at_ret.regs.ip = frames[inner].address;
  at_ret.regs.sp = stopped.regs.sp + slot;
  std::memcpy(&at_ret.regs.bp, stopped.stack.data() + slot - 8, 8);  // main.middle's rbp
  at_ret.stack = std::span(stopped.stack).subspan(slot);
  const auto on_ret = resolver.resolve(at_ret);
  SCOPED_TRACE("at ret:\n" + describe(on_ret));
  ASSERT_GE(on_ret.size(), 5u);
  EXPECT_EQ(on_ret[0].symbol, "main.inner");
  EXPECT_EQ(on_ret[1].symbol, "main.middle");
  EXPECT_EQ(on_ret[2].symbol, "main.outer");
  EXPECT_EQ(on_ret[3].symbol, "main.main");
  EXPECT_EQ(on_ret[4].symbol, "runtime.main");
}

INSTANTIATE_TEST_SUITE_P(Builds, GoStackTest, ::testing::Values("gostack", "gostack_stripped"));

#else

TEST(GoStackTest, FramePointersNameTheCallersOfAGoFunction) {
  GTEST_SKIP() << "built without Go";
}

#endif

}  // namespace
}  // namespace funclatency
