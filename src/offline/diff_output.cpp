// Table and JSON renderings of a DiffResult (see diff_output.h).
#include "offline/diff_output.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace funclatency::offline {
namespace {

std::string ratio_text(double before, double after) {
  if (before <= 0) return "-";
  return fmt::format("x{:.2f}", after / before);
}

std::string cell(const DiffSide& side, double value) {
  return side.present && side.count > 0 ? format_duration(value) : "-";
}

nlohmann::json side_json(const DiffSide& side) {
  if (!side.present) return nullptr;
  return {{"count", side.count},        {"mean_ns", side.mean_ns}, {"p50_ns", side.p50_ns},
          {"p95_ns", side.p95_ns},      {"p99_ns", side.p99_ns},   {"lost", side.lost},
          {"intervals", side.intervals}};
}

nlohmann::json ratio_json(double before, double after) {
  if (before <= 0) return nullptr;
  return after / before;
}

}  // namespace

std::string format_duration(double ns) {
  if (ns >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3g} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string format_diff_table(const DiffResult& result, uint64_t /*unit_ns*/) {
  std::string out =
      fmt::format("{:<28} {:>15} {:>22} {:>22} {:>22} {:>22} {:>8} {:>5}  {}\n", "function",
                  "calls", "mean", "p50", "p95", "p99", "p", "A", "verdict");
  for (const FunctionDiff& d : result.functions) {
    auto column = [&](double before, double after) {
      return fmt::format("{}->{} {}", cell(d.base, before), cell(d.now, after),
                         ratio_text(before, after));
    };
    std::string name = d.symbol + " (" + d.binary + ")";
    std::string p = d.df_rows > 0 ? fmt::format("{:.2g}", d.p_value) : "-";
    std::string verdict(verdict_name(d.verdict));
    if (d.gate_failed)
      verdict += fmt::format("  FAILS --fail-if-slower ({})", result.gate->label());
    out += fmt::format("{:<28} {:>15} {:>22} {:>22} {:>22} {:>22} {:>8} {:>5.2f}  {}\n", name,
                       fmt::format("{}->{}", d.base.count, d.now.count),
                       column(d.base.mean_ns, d.now.mean_ns), column(d.base.p50_ns, d.now.p50_ns),
                       column(d.base.p95_ns, d.now.p95_ns), column(d.base.p99_ns, d.now.p99_ns), p,
                       d.superiority, verdict);
  }
  out += fmt::format(
      "p: G-test of homogeneity on log2 rows against the runs' interval-to-interval scatter "
      "(F test); A: P(new call > base call). slower/faster: p < {:.2g} (alpha / functions) "
      "and |A - 0.5| >= 0.06\n",
      result.alpha_per_function);
  return out;
}

std::string format_diff_json(const DiffResult& result) {
  nlohmann::json functions = nlohmann::json::array();
  for (const FunctionDiff& d : result.functions) {
    nlohmann::json f = {
        {"symbol", d.symbol},
        {"binary", d.binary},
        {"base", side_json(d.base)},
        {"new", side_json(d.now)},
        {"ratio",
         {{"mean", ratio_json(d.base.mean_ns, d.now.mean_ns)},
          {"p50", ratio_json(d.base.p50_ns, d.now.p50_ns)},
          {"p95", ratio_json(d.base.p95_ns, d.now.p95_ns)},
          {"p99", ratio_json(d.base.p99_ns, d.now.p99_ns)}}},
        {"superiority", d.superiority},
        {"g", d.g_statistic},
        {"dispersion", d.dispersion},
        {"df_rows", d.df_rows},
        {"df_intervals", d.df_intervals},
        {"p_value", d.p_value},
        {"distribution_differs", d.distribution_differs},
        {"verdict", verdict_name(d.verdict)},
    };
    if (result.gate) {
      f["gate_ratio"] = d.gated_ratio;
      f["gate_failed"] = d.gate_failed;
    }
    functions.push_back(std::move(f));
  }
  nlohmann::json out = {{"alpha_per_function", result.alpha_per_function},
                        {"functions", functions}};
  if (result.gate) {
    out["gate"] = {{"percent", result.gate->percent},
                   {"quantile", result.gate->quantile},
                   {"failed", result.gate_failed}};
  }
  return out.dump(2) + "\n";
}

}  // namespace funclatency::offline
