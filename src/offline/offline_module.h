// The offline subcommands' module (funclatency-offline.so, loaded as the
// exporters are, see output/exporter_module.h): `funclatency report` and
// `funclatency diff` read files and never trace, so their code (the NDJSON
// reader, the HTML report, the diff statistics: a third of the binary's
// compile time) is built beside the binary, not into it. The demo builds the
// binary alone and starts tracing sooner; a whole build makes the module.
// This header is the contract between the two.
#pragma once

namespace funclatency {

// `funclatency report|diff ARGS...` as a whole: argv[1] names the subcommand.
// Prints the result and any error itself; returns the exit code (diff: 3 when
// --fail-if-slower failed).
using OfflineModuleEntry = int (*)(int argc, char** argv);
inline constexpr const char* kOfflineModuleEntry = "funclatency_offline_main_v1";
inline constexpr const char* kOfflineModuleFile = "funclatency-offline.so";

// The subcommands' lines in the tracing command's --help.
inline constexpr const char* kOfflineHelp = R"(
Offline, from the JSON lines of a run (funclatency --json -i SECS ... > run.ndjson):
  funclatency report RUN.ndjson [-o report.html]
                                 one self-contained HTML page: latency heatmap per function,
                                 p50/p95/p99 over time, lost calls, mode changes, totals
  funclatency diff BASE.ndjson NEW.ndjson [--json] [--fail-if-slower PCT[@pNN]]
                                 per function: before/after, ratios, slower/faster/no
                                 significant change; exit 3 when pNN (default p95) got
                                 significantly slower by more than PCT percent
)";

}  // namespace funclatency
