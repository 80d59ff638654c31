// Run-to-run comparison (see run_diff.h). The unit of the test is the call,
// binned in log2 rows; calls are not independent (they share the machine's
// state over time), so the G statistic between runs is scaled by how much a
// run's own intervals scatter around that run's distribution beyond what
// independent calls would give (a quasi-likelihood F test).
#include "offline/run_diff.h"

#include <fmt/format.h>
#include <gsl/gsl_cdf.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "common/names_table.h"
#include "offline/bucket_math.h"

namespace funclatency::offline {
namespace {

constexpr double kMinExpected = 5;

// A function's calls in one run: its merged series.
struct Pooled {
  bool present = false;
  RecordedRows rows;                  // all calls
  std::vector<RecordedRows> batches;  // per interval record with calls
  DiffSide side;
  RecordedHistogram single_total;  // when the function is one series with a total
  bool has_single_total = false;
};

using FunctionKey = std::pair<std::string, std::string>;  // symbol, binary basename

// A record's histogram that a comparison is about: the wall time, or (--self)
// the self time, absent in records without it.
using Pick = const RecordedHistogram* (*)(const Record&);
const RecordedHistogram* wall_of(const Record& record) {
  return &record.wall;
}
const RecordedHistogram* self_of(const Record& record) {
  return record.self ? &*record.self : nullptr;
}

// What the self time of a function is compared as: a function of its own.
constexpr std::string_view kSelfSuffix = " [self]";

// Each function's calls, by `pick`; with `suffix` after the symbol. Series
// whose records have no such histogram are left out.
std::map<FunctionKey, Pooled> pool(const Run& run, Pick pick = wall_of,
                                   std::string_view suffix = {}) {
  std::map<FunctionKey, Pooled> pooled;
  std::map<FunctionKey, int> series_count;
  for (const Series& series : run.series) {
    const bool has = (series.total && pick(*series.total)) ||
                     std::any_of(series.intervals.begin(), series.intervals.end(),
                                 [&](const Record& r) { return pick(r) != nullptr; });
    if (!has) continue;
    FunctionKey key{series.key.symbol + std::string(suffix),
                    std::string(basename_of(series.key.binary))};
    Pooled& p = pooled[key];
    p.present = true;
    ++series_count[key];
    RecordedHistogram all;
    uint64_t lost = 0;
    for (const Record& record : series.intervals) {
      lost += record.lost.total;
      const RecordedHistogram* h = pick(record);
      if (!h || h->count == 0) continue;
      p.batches.push_back(row_counts(*h, run.unit_ns));
      if (!series.total) all = merged(all, *h, run.unit_ns);
    }
    if (series.total && pick(*series.total)) {
      all = *pick(*series.total);
      lost = series.total->lost.total;
      p.single_total = all;
    }
    add_rows(p.rows, row_counts(all, run.unit_ns));
    DiffSide& s = p.side;
    const double sum = s.mean_ns * static_cast<double>(s.count) + static_cast<double>(all.sum_ns);
    s.count += all.count;
    s.mean_ns = s.count ? sum / static_cast<double>(s.count) : 0;
    s.lost += lost;
    s.intervals += series.intervals.size();
  }
  for (auto& [key, p] : pooled) {
    p.has_single_total = series_count[key] == 1 && p.single_total.count > 0;
    DiffSide& s = p.side;
    s.present = true;
    auto quantile = [&](double q) {
      return p.has_single_total ? quantile_ns(p.single_total, run.unit_ns, q)
                                : estimate_quantile_ns(p.rows, run.unit_ns, q);
    };
    s.p50_ns = quantile(0.50);
    s.p95_ns = quantile(0.95);
    s.p99_ns = quantile(0.99);
  }
  return pooled;
}

double side_quantile(const DiffSide& side, double q) {
  if (q == 0.50) return side.p50_ns;
  if (q == 0.95) return side.p95_ns;
  return side.p99_ns;
}

void test_function(FunctionDiff& diff, const Pooled& base, const Pooled& now) {
  diff.superiority = superiority(base.rows, now.rows);
  const std::vector<size_t> starts = merge_rows(base.rows, now.rows);
  if (starts.size() < 2) return;  // one group: the same distribution at this resolution
  diff.df_rows = static_cast<double>(starts.size() - 1);
  diff.g_statistic = g_test(grouped(base.rows, starts), grouped(now.rows, starts));
  double scatter = 0, df = 0;
  for (const Pooled* run : {&base, &now}) {
    std::vector<std::vector<double>> batches;
    for (const RecordedRows& batch : run->batches) batches.push_back(grouped(batch, starts));
    double run_df = 0;
    scatter += interval_scatter(batches, run_df);
    df += run_df;
  }
  diff.df_intervals = df;
  if (df > 0) {
    diff.dispersion = std::max(1.0, scatter / df);
    diff.p_value = f_q(diff.g_statistic / diff.df_rows / diff.dispersion, diff.df_rows, df);
  } else {
    diff.p_value = chi_square_q(diff.g_statistic, diff.df_rows);
  }
}

}  // namespace

std::string Gate::label() const {
  return fmt::format("p{:g} +{:g}%", quantile * 100, percent);
}

Result<Gate> parse_gate(std::string_view text) {
  const std::string hint = "write PCT or PCT@pNN, e.g. 20 or 10@p99 (pNN: p50, p95 or p99)";
  Gate gate;
  const size_t at = text.find('@');
  std::string_view percent = text.substr(0, at);
  auto [end, ec] = std::from_chars(percent.data(), percent.data() + percent.size(), gate.percent);
  if (ec != std::errc() || end != percent.data() + percent.size() || !(gate.percent >= 0) ||
      !std::isfinite(gate.percent)) {
    return bad_input(fmt::format("--fail-if-slower {}: not a percentage", text), hint);
  }
  if (at != std::string_view::npos) {
    std::string_view which = text.substr(at + 1);
    if (which == "p50") {
      gate.quantile = 0.50;
    } else if (which == "p95") {
      gate.quantile = 0.95;
    } else if (which == "p99") {
      gate.quantile = 0.99;
    } else {
      return bad_input(fmt::format("--fail-if-slower {}: unknown percentile {}", text, which),
                       hint);
    }
  }
  return gate;
}

namespace {
constexpr NamedValue<Verdict> kVerdictNames[] = {{Verdict::kSlower, "slower"},
                                                 {Verdict::kFaster, "faster"},
                                                 {Verdict::kNoChange, "no significant change"},
                                                 {Verdict::kOnlyBase, "only in base"},
                                                 {Verdict::kOnlyNew, "only in new"},
                                                 {Verdict::kNoCalls, "no calls"}};
static_assert(names_every_value(kVerdictNames, Verdict::kNoCalls));
}  // namespace

std::string_view verdict_name(Verdict verdict) {
  return name_in(kVerdictNames, verdict);
}

std::vector<size_t> merge_rows(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  const size_t rows = std::max(a.size(), b.size());
  const double na = static_cast<double>(total_of(a)), nb = static_cast<double>(total_of(b));
  const double n = na + nb;
  std::vector<size_t> starts;
  if (n == 0) return starts;
  const double smaller = std::min(na, nb) / n;
  double in_group = 0;
  size_t start = 0;
  bool open = false;
  for (size_t row = 0; row < rows; ++row) {
    const double here =
        static_cast<double>((row < a.size() ? a[row] : 0) + (row < b.size() ? b[row] : 0));
    if (!open && here == 0) continue;  // leading empty rows belong to no group
    if (!open) {
      start = row;
      open = true;
    }
    in_group += here;
    if (in_group * smaller >= kMinExpected) {
      starts.push_back(start);
      open = false;
      in_group = 0;
    }
  }
  // A short last group joins the one before it.
  if (open && starts.empty()) starts.push_back(start);
  return starts;
}

std::vector<double> grouped(const std::vector<uint64_t>& rows, const std::vector<size_t>& starts) {
  std::vector<double> groups(starts.size(), 0);
  for (size_t row = 0; row < rows.size(); ++row) {
    if (rows[row] == 0) continue;
    // The group whose start is the last one <= row (rows below the first go to the first).
    auto it = std::upper_bound(starts.begin(), starts.end(), row);
    const size_t group = it == starts.begin() ? 0 : static_cast<size_t>(it - starts.begin()) - 1;
    groups[group] += static_cast<double>(rows[row]);
  }
  return groups;
}

double g_test(const std::vector<double>& a, const std::vector<double>& b) {
  double na = 0, nb = 0;
  for (double x : a) na += x;
  for (double x : b) nb += x;
  const double n = na + nb;
  if (na == 0 || nb == 0) return 0;
  double g = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double row = a[i] + b[i];
    for (auto [observed, column] : {std::pair{a[i], na}, std::pair{b[i], nb}}) {
      const double expected = row * column / n;
      if (observed > 0) g += observed * std::log(observed / expected);
    }
  }
  return 2 * g;
}

double interval_scatter(const std::vector<std::vector<double>>& intervals, double& df) {
  df = 0;
  if (intervals.size() < 2) return 0;
  const size_t k = intervals.front().size();
  std::vector<double> pooled(k, 0);
  double n = 0;
  for (const auto& interval : intervals) {
    for (size_t i = 0; i < k; ++i) pooled[i] += interval[i];
  }
  for (double x : pooled) n += x;
  size_t used_groups = 0;
  for (double x : pooled) used_groups += x > 0;
  if (n == 0 || used_groups < 2) return 0;
  double x2 = 0;
  for (const auto& interval : intervals) {
    double m = 0;
    for (double x : interval) m += x;
    for (size_t i = 0; i < k; ++i) {
      if (pooled[i] == 0) continue;
      const double expected = m * pooled[i] / n;
      x2 += (interval[i] - expected) * (interval[i] - expected) / expected;
    }
  }
  df = static_cast<double>((intervals.size() - 1) * (used_groups - 1));
  return x2;
}

double superiority(const std::vector<uint64_t>& base, const std::vector<uint64_t>& now) {
  const double nb = static_cast<double>(total_of(base)), nn = static_cast<double>(total_of(now));
  if (nb == 0 || nn == 0) return 0.5;
  double below = 0;  // base calls in rows below the current one
  double wins = 0;
  const size_t rows = std::max(base.size(), now.size());
  for (size_t row = 0; row < rows; ++row) {
    const double b = row < base.size() ? static_cast<double>(base[row]) : 0;
    const double n = row < now.size() ? static_cast<double>(now[row]) : 0;
    wins += n * (below + b / 2);
    below += b;
  }
  return wins / (nb * nn);
}

double chi_square_q(double x, double df) {
  return gsl_cdf_chisq_Q(x, df);
}

double f_q(double x, double df1, double df2) {
  return gsl_cdf_fdist_Q(x, df1, df2);
}

DiffResult diff_runs(const Run& base, const Run& now, const DiffOptions& options,
                     const std::optional<Gate>& gate) {
  std::map<FunctionKey, Pooled> before = pool(base), after = pool(now);
  // --self runs: each function's self time is compared too, as "NAME [self]".
  before.merge(pool(base, self_of, kSelfSuffix));
  after.merge(pool(now, self_of, kSelfSuffix));
  std::map<FunctionKey, std::pair<const Pooled*, const Pooled*>> both;
  static const Pooled kAbsent;
  for (const auto& [key, p] : before) both[key] = {&p, &kAbsent};
  for (const auto& [key, p] : after) {
    auto [it, inserted] = both.try_emplace(key, &kAbsent, &p);
    if (!inserted) it->second.second = &p;
  }
  DiffResult result;
  result.gate = gate;
  size_t tested = 0;
  for (const auto& [key, sides] : both) {
    FunctionDiff diff;
    diff.symbol = key.first;
    diff.binary = key.second;
    diff.base = sides.first->side;
    diff.now = sides.second->side;
    if (diff.base.count > 0 && diff.now.count > 0) {
      test_function(diff, *sides.first, *sides.second);
      ++tested;
    }
    result.functions.push_back(std::move(diff));
  }
  result.alpha_per_function = options.alpha / static_cast<double>(std::max<size_t>(tested, 1));
  for (FunctionDiff& diff : result.functions) {
    if (!diff.base.present) {
      diff.verdict = Verdict::kOnlyNew;
    } else if (!diff.now.present) {
      diff.verdict = Verdict::kOnlyBase;
    } else if (diff.base.count == 0 || diff.now.count == 0) {
      diff.verdict = diff.base.count == diff.now.count ? Verdict::kNoCalls
                     : diff.base.count == 0            ? Verdict::kOnlyNew
                                                       : Verdict::kOnlyBase;
    } else {
      diff.distribution_differs = diff.p_value < result.alpha_per_function;
      const double shift = diff.superiority - 0.5;
      if (!diff.distribution_differs || std::abs(shift) < options.min_effect) {
        diff.verdict = Verdict::kNoChange;
      } else {
        diff.verdict = shift > 0 ? Verdict::kSlower : Verdict::kFaster;
      }
    }
    if (gate && diff.base.count > 0 && diff.now.count > 0) {
      const double before_q = side_quantile(diff.base, gate->quantile);
      diff.gated_ratio = before_q > 0 ? side_quantile(diff.now, gate->quantile) / before_q : 0;
      // Only a function judged slower fails the gate: a significant but
      // negligible shift (the verdict's effect floor) of a short function can
      // still move a tail quantile across a fine bucket on identical runs.
      diff.gate_failed =
          diff.verdict == Verdict::kSlower && diff.gated_ratio > 1 + gate->percent / 100;
      result.gate_failed = result.gate_failed || diff.gate_failed;
    }
  }
  return result;
}

}  // namespace funclatency::offline
