// Programs the BPF tests start (the target, the tool): killed when the test
// ends, or when the test process dies.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"

namespace funclatency::testing {

// Both ends of a pipe, closed on exec.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
  static Pipe open();
};

class ChildProcess {
 public:
  // Runs argv[0] with `stdout_fd` and `stderr_fd` as its stdout and stderr
  // (-1: /dev/null) and stdin from /dev/null.
  ChildProcess(const std::vector<std::string>& argv, int stdout_fd, int stderr_fd);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Neither exited nor killed yet. Reaps the process if it has exited.
  bool running();
  // Waits for the exit; its wait status, or nullopt after `timeout`.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// A copy of a file in a directory of its own, both removed when destroyed.
class PrivateCopy {
 public:
  explicit PrivateCopy(const std::string& original);
  PrivateCopy(const PrivateCopy&) = delete;
  PrivateCopy& operator=(const PrivateCopy&) = delete;
  ~PrivateCopy();
  const std::string& path() const { return path_; }  // empty when the copy failed

 private:
  std::string directory_;
  std::string path_;
};

// examples/target-app, calling slow_op, fast_op and cet_op (--rate 200) until
// it is killed; started and ready (it has said so) unless ready() is false.
// It runs a private copy of the binary: uprobes belong to a file, so a
// funclatency run elsewhere on this machine that traces target-app:slow_op
// system-wide (as the e2e tests do) leaves this copy alone.
class TargetApp {
 public:
  TargetApp();
  const std::string& path() const { return binary_.path(); }
  pid_t pid() const { return process_.pid(); }
  bool running() { return process_.running(); }
  bool ready() const { return ready_; }
  const std::string& output() const { return output_; }  // what it printed

 private:
  PrivateCopy binary_;
  Pipe stdout_;
  ChildProcess process_;
  std::string output_;
  bool ready_ = false;
};

// Reads `fd` until a line starts with `prefix`; that line, or nullopt when
// the stream ends or `timeout` passes first. Everything read goes to `seen`.
std::optional<std::string> read_line_starting_with(int fd, std::string_view prefix,
                                                   std::chrono::milliseconds timeout,
                                                   std::string& seen);

// Reads `fd` to its end.
std::string read_all(int fd);

}  // namespace funclatency::testing
