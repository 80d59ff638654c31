// Why: see command_line.h.
#include "cli/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include "offline/offline_module.h"
#include "output/otlp/otlp_cli_options.h"

namespace funclatency {

namespace {

// The help ends as BCC's tools' do: the exit status, then a few examples a
// reader can copy, one task each (docs/funclatency.8 has them all).
constexpr const char* kExamples = R"(
Exit status: 0 success, 1 runtime failure, 2 bad usage or input
(funclatency diff: 3 when --fail-if-slower fails).

EXAMPLES:
  funclatency /usr/bin/myapp:handle_request     # time a function in every process
  funclatency -p 1234 :handle_request           # ... in the binary process 1234 runs
  funclatency -p 1234 c:malloc                  # malloc in that process's libc
  funclatency -i 2 -m ./server:'ns::Db::query*' # C++ overloads, msec, every 2 s
  funclatency -l 'c:str*'                       # list what a pattern matches
  funclatency --cpu-split --slowest 3 -p 1234 :handle_request
                                                # why slow: on-CPU/runnable/blocked,
                                                # the 3 slowest calls with stacks
  funclatency --by pid -d 10 /usr/bin/myapp:f   # who is slow: a histogram per process
  funclatency --follow /app/server:handle       # every container running /app/server
  funclatency --prometheus 9464 -p 1234 :handle # serve /metrics for Prometheus
  funclatency --json -i 1 -d 60 ./app:f > run.ndjson && funclatency report run.ndjson
)";

void add_privilege_options(CLI::App& app, PrivilegeCliValues& values) {
  app.add_option("--user", values.user,
                 "Once attached, run as this user (all capabilities are dropped either way)")
      ->type_name("NAME");
}

}  // namespace

std::expected<Arguments, int> parse_command_line(int argc, char** argv) {
  CLI::App app{
      "funclatency: time every call of a function with eBPF uprobes, and print the\n"
      "latency distribution as a log2 histogram with percentiles.",
      "funclatency"};
  app.footer(std::string(kOfflineHelp) + kExamples);
  app.get_formatter()->column_width(34);
  Arguments arguments;
  const bool config_file = std::any_of(argv + 1, argv + argc, [](const char* arg) {
    return std::string_view(arg) == "--config" || std::string_view(arg).starts_with("--config=");
  });
  add_core_options(app, arguments.core, !config_file);
  add_prometheus_options(app, arguments.prometheus);
  add_otlp_options(app, arguments.otlp);
  add_privilege_options(app, arguments.privileges);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return std::unexpected(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return std::unexpected(app.exit(e));
  } catch (const CLI::CallForVersion& e) {  // --version (config.cpp)
    return std::unexpected(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "funclatency: %s (see --help)\n", e.what());
    return std::unexpected(2);
  }
  return arguments;
}

}  // namespace funclatency
