// Log2-row arithmetic for the offline report and diff (see bucket_math.h).
#include "offline/bucket_math.h"

#include <algorithm>
#include <cmath>

#include "histogram/latency_histogram.h"

namespace funclatency::offline {

std::optional<uint64_t> unit_of_buckets(const std::vector<Bucket>& buckets) {
  if (buckets.empty()) return uint64_t{0};
  for (uint64_t unit : {uint64_t{1000000}, uint64_t{1000}, uint64_t{1}}) {
    bool fits = true;
    for (const Bucket& b : buckets) {
      const uint64_t end = b.high_ns + 1;
      if (b.low_ns % unit != 0 || end % unit != 0) {
        fits = false;
        break;
      }
      const uint64_t low = b.low_ns / unit, high = end / unit;
      // One of the histogram's log2 rows, or row 0's upper half [1, 2) (its
      // power-of-two split, LatencyHistogram::power_of_two_counts).
      const uint32_t row = LatencyHistogram::row_of(low);
      if (high != LatencyHistogram::row_end(row) ||
          (low != LatencyHistogram::row_low(row) && low != 1)) {
        fits = false;
        break;
      }
    }
    if (fits) return unit;
  }
  return std::nullopt;
}

uint32_t row_of(uint64_t low_ns, uint64_t unit_ns) {
  return LatencyHistogram::row_of(low_ns / unit_ns);
}

uint64_t row_low_ns(uint32_t row, uint64_t unit_ns) {
  return LatencyHistogram::row_low(row) * unit_ns;
}

uint64_t row_high_ns(uint32_t row, uint64_t unit_ns) {
  return LatencyHistogram::row_end(row) * unit_ns - 1;
}

RecordedRows row_counts(const RecordedHistogram& histogram, uint64_t unit_ns) {
  RecordedRows rows;
  for (const Bucket& b : histogram.buckets) {
    const uint32_t row = row_of(b.low_ns, unit_ns);
    if (rows.size() <= row) rows.resize(row + 1, 0);
    rows[row] += b.count;
  }
  return rows;
}

void add_rows(RecordedRows& into, const RecordedRows& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}

uint64_t total_of(const RecordedRows& rows) {
  uint64_t total = 0;
  for (uint64_t count : rows) total += count;
  return total;
}

RecordedHistogram merged(const RecordedHistogram& a, const RecordedHistogram& b, uint64_t unit_ns) {
  RecordedHistogram out;
  out.count = a.count + b.count;
  out.sum_ns = a.sum_ns + b.sum_ns;
  out.min_ns = a.count == 0 ? b.min_ns : b.count == 0 ? a.min_ns : std::min(a.min_ns, b.min_ns);
  out.max_ns = std::max(a.max_ns, b.max_ns);
  RecordedRows rows = row_counts(a, unit_ns);
  add_rows(rows, row_counts(b, unit_ns));
  for (uint32_t row = 0; row < rows.size(); ++row) {
    if (rows[row] == 0) continue;
    out.buckets.push_back({row_low_ns(row, unit_ns), row_high_ns(row, unit_ns), rows[row]});
  }
  return out;
}

double estimate_quantile_ns(const RecordedRows& rows, uint64_t unit_ns, double q, uint64_t min_ns,
                            uint64_t max_ns) {
  const uint64_t total = total_of(rows);
  if (total == 0) return 0;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  double below = 0;
  double value = 0;
  for (uint32_t row = 0; row < rows.size(); ++row) {
    if (rows[row] == 0) continue;
    const double count = static_cast<double>(rows[row]);
    if (below + count >= rank || row + 1 == rows.size()) {
      const double fraction = std::clamp((rank - below) / count, 0.0, 1.0);
      const double low = static_cast<double>(row_low_ns(row, unit_ns));
      const double end = static_cast<double>(row_high_ns(row, unit_ns) + 1);
      value = row == 0 ? end * fraction : low * std::pow(end / low, fraction);
      break;
    }
    below += count;
  }
  if (max_ns > 0)
    value = std::clamp(value, static_cast<double>(min_ns), static_cast<double>(max_ns));
  return value;
}

double quantile_ns(const RecordedHistogram& histogram, uint64_t unit_ns, double q) {
  const std::optional<uint64_t>* recorded = nullptr;
  if (q == 0.50) recorded = &histogram.p50_ns;
  if (q == 0.95) recorded = &histogram.p95_ns;
  if (q == 0.99) recorded = &histogram.p99_ns;
  if (recorded && *recorded) return static_cast<double>(**recorded);
  return estimate_quantile_ns(row_counts(histogram, unit_ns), unit_ns, q, histogram.min_ns,
                              histogram.max_ns);
}

}  // namespace funclatency::offline
