// Compares two runs function by function: count, mean and percentiles before
// and after, and a verdict from a test of homogeneity on the log2 rows whose
// noise scale is the runs' own interval-to-interval scatter (docs/report-and-diff.md). Pure: no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "offline/run_reader.h"

namespace funclatency::report {

struct DiffOptions {
  double alpha = 0.01;       // family-wise, split over the functions (Bonferroni)
  double min_effect = 0.06;  // |A - 0.5| below this is a negligible shift (Vargha-Delaney)
};

// --fail-if-slower PCT[@pNN]
struct Gate {
  double percent = 0;
  double quantile = 0.95;
  std::string label() const;  // "p95 +20%"
};
Result<Gate> parse_gate(std::string_view text);

// One side of a function's comparison.
struct DiffSide {
  bool present = false;
  uint64_t count = 0;
  double mean_ns = 0, p50_ns = 0, p95_ns = 0, p99_ns = 0;
  uint64_t lost = 0;
  size_t intervals = 0;
};

enum class Verdict { kSlower, kFaster, kNoChange, kOnlyBase, kOnlyNew, kNoCalls };
std::string_view verdict_name(Verdict verdict);

struct FunctionDiff {
  std::string symbol;
  std::string binary;  // basename
  DiffSide base, now;
  // P(a new call > a base call) + P(tie)/2, ties = same log2 row.
  double superiority = 0.5;
  double g_statistic = 0;  // G-test of homogeneity over merged rows
  double dispersion = 1;   // phi: within-run interval scatter / multinomial
  double df_rows = 0, df_intervals = 0;
  double p_value = 1;
  // p below the per-function alpha: the distributions differ by more than
  // the runs' own scatter. Slower/faster also needs a non-negligible shift.
  bool distribution_differs = false;
  Verdict verdict = Verdict::kNoChange;
  double gated_ratio = 0;  // new/base at the gate's quantile (0: no gate or no base)
  bool gate_failed = false;
};

struct DiffResult {
  std::vector<FunctionDiff> functions;
  double alpha_per_function = 0;
  std::optional<Gate> gate;
  bool gate_failed = false;
};

DiffResult diff_runs(const Run& base, const Run& now, const DiffOptions& options,
                     const std::optional<Gate>& gate);

// --- the statistics, exposed for tests ---

// Adjacent rows grouped so that every group's expected count is >= 5 in
// both columns of a 2 x k table with these column totals; returns each
// group's first row (ascending).
std::vector<size_t> merge_rows(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);
std::vector<double> grouped(const std::vector<uint64_t>& rows, const std::vector<size_t>& starts);
// G = 2 sum O ln(O/E) of the 2 x k table.
double g_test(const std::vector<double>& a, const std::vector<double>& b);
// Pearson X^2 of intervals x k (homogeneity of a run's intervals); df out.
double interval_scatter(const std::vector<std::vector<double>>& intervals, double& df);
double superiority(const std::vector<uint64_t>& base, const std::vector<uint64_t>& now);
// Upper tails: chi-square and F distributions (GSL).
double chi_square_q(double x, double df);
double f_q(double x, double df1, double df2);

}  // namespace funclatency::report
