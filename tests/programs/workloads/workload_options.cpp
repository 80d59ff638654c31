#include "workload_options.h"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace funclatency::workload {

std::optional<int> parse_workload_options(int argc, char** argv, const std::string& description,
                                          WorkloadOptions& options) {
  CLI::App app{description};
  app.add_option("--calls", options.calls, "calls to make (see the description)")
      ->capture_default_str();
  app.add_option("--threads", options.threads, "threads making calls")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the durations drawn")->capture_default_str();
  app.add_option("--abandon", options.abandoned_calls,
                 "calls leaving by exception or longjmp, made first (where the program has them)")
      ->capture_default_str();
  app.add_option("--truth", options.truth_path,
                 "at exit, write calls and the measured log2 usec histogram per function as JSON");
  app.add_flag("--wait-signal", options.wait_signal,
               "print 'ready pid=N', then start only when SIGUSR1 arrives");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  return std::nullopt;
}

int finish_workload(const TruthReport& report, const WorkloadOptions& options,
                    const std::string& program) {
  if (!options.truth_path.empty() && !report.write(options.truth_path, program)) {
    std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), options.truth_path.c_str());
    return 1;
  }
  return 0;
}

WorkloadRun::WorkloadRun(int argc, char** argv, std::string program, const std::string& description,
                         WorkloadOptions defaults)
    : program_(std::move(program)), options_(std::move(defaults)) {
  early_exit_ = parse_workload_options(argc, argv, program_ + ": " + description, options_);
}

}  // namespace funclatency::workload
