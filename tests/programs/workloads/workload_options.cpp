#include "workload_options.h"

#include <cstdio>

namespace funclatency::workload {

std::optional<int> parse_workload_options(int argc, char** argv, const std::string& description,
                                          WorkloadOptions& options) {
  enum { kCalls = 1, kThreads, kSeed, kAbandon, kTruth, kWaitSignal };
  static const option kLong[] = {{"calls", required_argument, nullptr, kCalls},
                                 {"threads", required_argument, nullptr, kThreads},
                                 {"seed", required_argument, nullptr, kSeed},
                                 {"abandon", required_argument, nullptr, kAbandon},
                                 {"truth", required_argument, nullptr, kTruth},
                                 {"wait-signal", no_argument, nullptr, kWaitSignal},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  const std::string usage =
      description + "\n\nOptions:\n" + "  --calls N       calls to make (see above; default " +
      std::to_string(options.calls) + ")\n" +
      "  --threads N     threads making calls, 1 to 1024 (default " +
      std::to_string(options.threads) + ")\n" +
      "  --seed N        seed of the durations drawn (default " + std::to_string(options.seed) +
      ")\n" +
      "  --abandon N     calls leaving by exception or longjmp, made first (where the\n"
      "                  program has them; default " +
      std::to_string(options.abandoned_calls) + ")\n" +
      "  --truth FILE    at exit, write calls and the measured log2 usec histogram per\n"
      "                  function as JSON\n"
      "  --wait-signal   print 'ready pid=N', then start only when SIGUSR1 arrives\n";
  // Every option but two takes a whole number.
  struct Handler final : OptionHandler {
    Handler(const char* name, WorkloadOptions& into) : program(name), options(into) {}
    const char* program;
    WorkloadOptions& options;
    std::optional<int> handle(int code, const char* value) override {
      if (code == kTruth) {
        options.truth_path = value;
        return std::nullopt;
      }
      if (code == kWaitSignal) {
        options.wait_signal = true;
        return std::nullopt;
      }
      auto number = whole_number(value);
      if (code == kThreads && number && (*number < 1 || *number > 1024)) number.reset();
      if (!number) {
        return bad_option_value(
            program, name_of(code), value,
            code == kThreads ? "a whole number from 1 to 1024" : "a whole number");
      }
      if (code == kCalls) options.calls = *number;
      if (code == kThreads) options.threads = static_cast<unsigned>(*number);
      if (code == kSeed) options.seed = *number;
      if (code == kAbandon) options.abandoned_calls = *number;
      return std::nullopt;
    }
    static const char* name_of(int code) {
      for (const option* entry = kLong; entry->name; ++entry) {
        if (entry->val == code) return entry->name;
      }
      return "?";
    }
  } handler(argv[0], options);
  return parse_command_line(argc, argv, argv[0], kLong, usage, handler);
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
