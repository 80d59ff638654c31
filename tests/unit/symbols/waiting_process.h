// A fixture program started with --wait for tests that need a live PID: it
// prints name=address lines and "ready", then waits until it is killed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace funclatency::testing {

class WaitingProcess {
 public:
  explicit WaitingProcess(const std::vector<std::string>& argv);
  WaitingProcess(const WaitingProcess&) = delete;
  WaitingProcess& operator=(const WaitingProcess&) = delete;
  ~WaitingProcess();

  pid_t pid() const { return pid_; }
  bool ready() const { return ready_; }
  // Addresses the program printed as "name=0x...".
  uint64_t address_of(const std::string& name) const;

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
  std::map<std::string, uint64_t> addresses_;
};

// The file offset of a run-time address in `pid`, from /proc/PID/maps.
uint64_t file_offset_in_maps(pid_t pid, uint64_t address);

// A PID that no process has right now.
int unused_pid();

}  // namespace funclatency::testing
