#include "waiting_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

extern char** environ;

namespace funclatency::testing {

WaitingProcess::WaitingProcess(const std::vector<std::string>& argv) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
  std::vector<char*> arguments;
  for (const auto& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);
  if (posix_spawn(&pid_, arguments[0], &actions, nullptr, arguments.data(), environ) != 0) {
    pid_ = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_ends[1]);
  FILE* output = fdopen(pipe_ends[0], "r");
  char line[256];
  while (output != nullptr && fgets(line, sizeof line, output) != nullptr) {
    std::string text(line);
    if (text.starts_with("ready")) {
      ready_ = true;
      break;
    }
    if (const size_t equals = text.find('='); equals != std::string::npos) {
      addresses_[text.substr(0, equals)] = std::stoull(text.substr(equals + 1), nullptr, 16);
    }
  }
  if (output != nullptr) fclose(output);
}

WaitingProcess::~WaitingProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

uint64_t WaitingProcess::address_of(const std::string& name) const {
  const auto found = addresses_.find(name);
  return found == addresses_.end() ? 0 : found->second;
}

uint64_t file_offset_in_maps(pid_t pid, uint64_t address) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0, offset = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx", &start, &end, &offset) != 3) continue;
    if (address >= start && address < end) return address - start + offset;
  }
  return 0;
}

int unused_pid() {
  // Far above the default pid_max of small machines, and checked.
  for (int pid = 4000000; pid > 1000; --pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return pid;
  }
  return -1;
}

}  // namespace funclatency::testing
