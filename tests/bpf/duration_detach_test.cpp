// `funclatency -d 1 -p PID TARGET` against a process that keeps running: the
// probes are gone from the process before the tool exits, not just after (the
// kernel removes a dead tool's probes anyway).
//
// Race-free: the tool's stdout is a pipe the test fills before the tool
// starts, so the tool blocks in its first write, the final report, which the
// run's end writes after detaching. While the tool is blocked there it has
// not exited, and the test reads the target's memory; then it drains the pipe
// and lets the tool finish.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bpf_permission.h"
#include "child_process.h"
#include "process_memory.h"
#include "symbols/elf_symbol_resolver.h"

namespace funclatency {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::file_bytes;
using testing::mapped_bytes;
using testing::Pipe;

// Fills the pipe to the last byte, so that any later write blocks; returns
// how many bytes it took.
size_t fill(const UniqueFd& write_end) {
  const int flags = fcntl(write_end.get(), F_GETFL);
  fcntl(write_end.get(), F_SETFL, flags | O_NONBLOCK);
  size_t filled = 0;
  const std::string page(4096, '#');
  for (size_t chunk : {page.size(), size_t{1}}) {
    ssize_t wrote;
    while ((wrote = write(write_end.get(), page.data(), chunk)) > 0) filled += wrote;
  }
  fcntl(write_end.get(), F_SETFL, flags);  // the tool's writes must block
  return filled;
}

// True while some thread of `pid` is in write(1, ...).
bool writing_to_stdout(pid_t pid) {
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    std::ifstream syscall_file(task.path() / "syscall");
    std::string line;
    std::getline(syscall_file, line);
    if (line.starts_with("1 0x1 ")) return true;  // __NR_write, fd 1
  }
  return false;
}

TEST(DurationDetach, ProbesAreGoneBeforeTheToolExits) {
  FL_SKIP_WITHOUT_BPF();
  testing::TargetApp target;
  ASSERT_FALSE(target.path().empty()) << "cannot copy " << TARGET_APP;
  ASSERT_TRUE(target.ready()) << "target-app did not start: " << target.output();

  ElfSymbolResolver resolver;
  auto sites = resolver.resolve(TargetSpec{target.path(), "slow_op"}, {.pid = target.pid()});
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  const ProbeSite& slow_op = sites->front();
  const auto original = file_bytes(slow_op.binary, slow_op.file_offset, slow_op.size);
  ASSERT_EQ(original.size(), slow_op.size);
  const auto in_target = [&] {
    return mapped_bytes(target.pid(), slow_op.binary, slow_op.file_offset, slow_op.size);
  };

  Pipe report = Pipe::open();
  Pipe messages = Pipe::open();
  const size_t filler = fill(report.write);
  ChildProcess tool(
      {FUNCLATENCY_TOOL, "-d", "1", "-p", std::to_string(target.pid()), target.path() + ":slow_op"},
      report.write.get(), messages.write.get());
  report.write.reset();
  messages.write.reset();
  std::string stderr_text;
  ASSERT_TRUE(testing::read_line_starting_with(messages.read.get(), "Tracing ", 30s, stderr_text))
      << "funclatency did not attach: " << stderr_text;
  EXPECT_NE(in_target(), original) << "no breakpoint in slow_op while the tool runs";

  // The run ends after a second; the tool then detaches and writes its report.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!writing_to_stdout(tool.pid())) {
    ASSERT_TRUE(tool.running()) << "funclatency exited without blocking on its report: "
                                << stderr_text;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "funclatency did not write its report within 30 s: " << stderr_text;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(in_target(), original)
      << "slow_op still holds a breakpoint while funclatency writes its final report";
  EXPECT_TRUE(writing_to_stdout(tool.pid())) << "the check did not happen before the tool exited";
  EXPECT_TRUE(target.running());

  const std::string output = testing::read_all(report.read.get());
  const auto status = tool.wait_exit(10s);
  ASSERT_TRUE(status) << "funclatency did not exit once its report was read";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  ASSERT_GT(output.size(), filler);
  EXPECT_NE(output.find("slow_op", filler), std::string::npos) << output.substr(filler);
}

}  // namespace
}  // namespace funclatency
