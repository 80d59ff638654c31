#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

namespace funclatency::testing {

Pipe Pipe::open() {
  int ends[2] = {-1, -1};
  if (pipe2(ends, O_CLOEXEC) != 0) return {};
  return Pipe{UniqueFd(ends[0]), UniqueFd(ends[1])};
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, int stdout_fd, int stderr_fd) {
  std::vector<char*> arguments;
  for (const auto& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ != 0) return;
  // The child: only async-signal-safe calls until exec.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  dup2(null_fd, STDIN_FILENO);
  dup2(stdout_fd >= 0 ? stdout_fd : null_fd, STDOUT_FILENO);
  dup2(stderr_fd >= 0 ? stderr_fd : null_fd, STDERR_FILENO);
  execv(arguments[0], arguments.data());
  _exit(127);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool ChildProcess::running() {
  if (pid_ <= 0 || status_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return !status_;
}

std::optional<int> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

PrivateCopy::PrivateCopy(const std::string& original) {
  std::string directory = (std::filesystem::temp_directory_path() / "fl-bpf-test-XXXXXX").string();
  if (mkdtemp(directory.data()) == nullptr) return;
  directory_ = directory;
  const auto copy = std::filesystem::path(directory_) / std::filesystem::path(original).filename();
  std::error_code error;
  if (!std::filesystem::copy_file(original, copy, error)) return;
  std::filesystem::permissions(copy, std::filesystem::perms::owner_all, error);
  if (!error) path_ = copy.string();
}

PrivateCopy::~PrivateCopy() {
  std::error_code error;
  if (!directory_.empty()) std::filesystem::remove_all(directory_, error);
}

TargetApp::TargetApp()
    : binary_(TARGET_APP),
      stdout_(Pipe::open()),
      process_({path(), "--rate", "200"}, stdout_.write.get(), -1) {
  stdout_.write.reset();
  using namespace std::chrono_literals;
  ready_ = read_line_starting_with(stdout_.read.get(), "ready", 10s, output_).has_value();
}

std::optional<std::string> read_line_starting_with(int fd, std::string_view prefix,
                                                   std::chrono::milliseconds timeout,
                                                   std::string& seen) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t line_start = 0;
  while (true) {
    for (size_t end; (end = seen.find('\n', line_start)) != std::string::npos;
         line_start = end + 1) {
      std::string_view line(seen.data() + line_start, end - line_start);
      if (line.starts_with(prefix)) return std::string(line);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd readable{fd, POLLIN, 0};
    if (poll(&readable, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got <= 0) return std::nullopt;
    seen.append(buffer, static_cast<size_t>(got));
  }
}

std::string read_all(int fd) {
  std::string text;
  char buffer[65536];
  ssize_t got;
  while ((got = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(got));
  return text;
}

}  // namespace funclatency::testing
