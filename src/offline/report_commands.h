// The offline subcommands, `funclatency report` and `funclatency diff`: their
// command lines (CLI11) and what they do with files. Results go back to main,
// which prints them and picks the exit code (3: the diff gate failed).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "common/error.h"
#include "offline/run_diff.h"

namespace funclatency::offline {

struct ReportArgs {
  std::string input;
  std::string output;  // default: the input with .html; "-" = stdout
};

struct DiffArgs {
  std::string base, now;
  bool json = false;
  std::string fail_if_slower;  // PCT[@pNN], empty = no gate
  double alpha = 0.01;
};

struct OfflineCommand {
  CLI::App* report = nullptr;
  CLI::App* diff = nullptr;
  ReportArgs report_args;
  DiffArgs diff_args;
};

// Adds the `report` and `diff` subcommands to `app`.
void add_offline_commands(CLI::App& app, OfflineCommand& command);

// Writes the HTML report; returns the line that says where it went.
Result<std::string> run_report(const ReportArgs& args);

struct DiffOutcome {
  std::string text;  // the table or JSON
  bool gate_failed = false;
};
Result<DiffOutcome> run_diff(const DiffArgs& args);

}  // namespace funclatency::offline
