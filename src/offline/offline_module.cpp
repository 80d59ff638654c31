// Built into funclatency-offline.so only: `funclatency report|diff`, parsed
// and run (see offline_module.h), the entry the binary looks up.
#include "offline/offline_module.h"

#include <cstdio>

#include "offline/report_commands.h"

namespace funclatency {
namespace {

int run_offline(int argc, char** argv) {
  CLI::App app{"funclatency: offline views of a run's --json output", "funclatency"};
  offline::OfflineCommand command;
  offline::add_offline_commands(app, command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "funclatency: %s (see funclatency %s --help)\n", e.what(), argv[1]);
    return 2;
  }
  auto fail = [](const Error& error) {
    std::fprintf(stderr, "funclatency: %s\n", error.message().c_str());
    return error.exit_code();
  };
  if (command.report->parsed()) {
    auto written = offline::run_report(command.report_args);
    if (!written) return fail(written.error());
    if (!written->empty()) std::fprintf(stderr, "%s\n", written->c_str());
    return 0;
  }
  auto diff = offline::run_diff(command.diff_args);
  if (!diff) return fail(diff.error());
  std::fputs(diff->text.c_str(), stdout);
  return diff->gate_failed ? 3 : 0;
}

}  // namespace
}  // namespace funclatency

extern "C" [[gnu::visibility("default")]] int funclatency_offline_main_v1(int argc, char** argv) {
  return funclatency::run_offline(argc, argv);
}

static_assert(
    std::is_same_v<decltype(&funclatency_offline_main_v1), funclatency::OfflineModuleEntry>);
