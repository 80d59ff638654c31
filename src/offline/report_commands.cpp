// `funclatency report` and `funclatency diff` (see report_commands.h).
#include "offline/report_commands.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>

#include "offline/diff_output.h"
#include "offline/html_report.h"
#include "offline/run_reader.h"

namespace funclatency::report {

void add_offline_commands(CLI::App& app, OfflineCommand& command) {
  command.report = app.add_subcommand(
      "report", "Write a self-contained HTML latency heatmap of a run's --json output");
  command.report->add_option("RUN", command.report_args.input, "JSON lines of funclatency --json")
      ->required();
  command.report->add_option("-o,--output", command.report_args.output,
                             "HTML file to write (default: RUN with .html; - = stdout)");
  command.report->footer(
      "\nExample:\n  funclatency --json -i 1 -d 60 ./app:handle > run.ndjson\n"
      "  funclatency report run.ndjson -o run.html\n");

  command.diff = app.add_subcommand(
      "diff", "Compare two runs per function: ratios and a verdict (slower/faster/no change)");
  command.diff->add_option("BASE", command.diff_args.base, "JSON lines of the baseline run")
      ->required();
  command.diff->add_option("NEW", command.diff_args.now, "JSON lines of the run to judge")
      ->required();
  command.diff->add_flag("--json", command.diff_args.json, "One JSON document instead of a table");
  command.diff->add_option("--fail-if-slower", command.diff_args.fail_if_slower,
                           "PCT[@pNN]: exit 3 when a function's pNN (default p95) is slower by "
                           "more than PCT percent and the change is significant");
  command.diff
      ->add_option("--alpha", command.diff_args.alpha,
                   "Family-wise significance level, split over the functions")
      ->check(CLI::Range(1e-9, 0.5));
  command.diff->footer(
      "\nThe test: a G-test of homogeneity on the log2 rows, judged against the runs' own\n"
      "interval-to-interval scatter; a run needs -i for that (docs/report-and-diff.md).\n"
      "Exit status: 0 ok, 1 runtime failure, 2 bad input, 3 the --fail-if-slower gate failed.\n"
      "Example:\n  funclatency diff base.ndjson new.ndjson --fail-if-slower 20@p95\n");
  app.require_subcommand(1);
}

Result<std::string> run_report(const ReportArgs& args) {
  auto run = read_run_file(args.input);
  if (!run) return std::unexpected(run.error());
  const std::string html = render_html(*run);
  std::string output = args.output;
  if (output.empty()) {
    const size_t dot = args.input.rfind('.');
    const size_t slash = args.input.rfind('/');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    output = (has_ext ? args.input.substr(0, dot) : args.input) + ".html";
  }
  if (output == "-") {
    if (std::fwrite(html.data(), 1, html.size(), stdout) != html.size() || std::fflush(stdout)) {
      return runtime_error("write the report to stdout", errno);
    }
    return std::string();
  }
  std::FILE* file = std::fopen(output.c_str(), "w");
  if (!file) return bad_input(fmt::format("create {}", output), "choose another -o path", errno);
  const bool written = std::fwrite(html.data(), 1, html.size(), file) == html.size();
  const int write_errno = errno;
  if (std::fclose(file) != 0 || !written) {
    return runtime_error(fmt::format("write {}", output), written ? errno : write_errno);
  }
  size_t intervals = 0;
  for (const Series& s : run->series) intervals = std::max(intervals, s.intervals.size());
  return fmt::format("wrote {} ({} functions, {} intervals, {} KiB)", output, run->series.size(),
                     intervals, (html.size() + 1023) / 1024);
}

Result<DiffOutcome> run_diff(const DiffArgs& args) {
  std::optional<Gate> gate;
  if (!args.fail_if_slower.empty()) {
    auto parsed = parse_gate(args.fail_if_slower);
    if (!parsed) return std::unexpected(parsed.error());
    gate = *parsed;
  }
  auto base = read_run_file(args.base);
  if (!base) return std::unexpected(base.error());
  auto now = read_run_file(args.now);
  if (!now) return std::unexpected(now.error());
  DiffOptions options;
  options.alpha = args.alpha;
  const DiffResult result = diff_runs(*base, *now, options, gate);
  DiffOutcome outcome;
  outcome.text = args.json ? format_diff_json(result) : format_diff_table(result, base->unit_ns);
  outcome.gate_failed = result.gate_failed;
  return outcome;
}

}  // namespace funclatency::report
