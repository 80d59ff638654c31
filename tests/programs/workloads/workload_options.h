// Options and exit path every test workload shares: how many calls, threads,
// where to write the ground truth, and whether to wait for SIGUSR1 to start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "workload_support.h"

namespace funclatency::workload {

struct WorkloadOptions {
  std::uint64_t calls = 0;
  unsigned threads = 1;
  std::uint64_t seed = 1;
  // Calls that leave by an exception or longjmp, made before the normal ones.
  std::uint64_t abandoned_calls = 0;
  std::string truth_path;
  bool wait_signal = false;
};

// Parses the shared options into `options` (which holds the defaults).
// Returns an exit code when the program should stop now (--help, bad usage).
std::optional<int> parse_workload_options(int argc, char** argv, const std::string& description,
                                          WorkloadOptions& options);

// Writes the truth file if one was asked for; returns main()'s exit code.
int finish_workload(const TruthReport& report, const WorkloadOptions& options,
                    const std::string& program);

// What every workload's main() does around its calls: signals, options,
// readiness, truth file. Build it first in main(), before any thread.
class WorkloadRun {
 public:
  WorkloadRun(int argc, char** argv, std::string program, const std::string& description,
              WorkloadOptions defaults);
  // Set when main() should return at once (--help, bad usage).
  std::optional<int> early_exit() const { return early_exit_; }
  const WorkloadOptions& options() const { return options_; }
  const RunControl& control() const { return control_; }
  FunctionTruth& add_function(std::string name) { return report_.add(std::move(name)); }
  // Prints readiness and, with --wait-signal, waits for SIGUSR1.
  void start() { control_.announce_and_wait(options_.wait_signal); }
  bool keep_going() const { return !control_.stop_requested(); }
  // Writes the truth; returns main()'s exit code.
  int finish() const { return finish_workload(report_, options_, program_); }

 private:
  RunControl control_;
  std::string program_;
  WorkloadOptions options_;
  std::optional<int> early_exit_;
  TruthReport report_;
};

}  // namespace funclatency::workload
