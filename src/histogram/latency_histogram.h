// The one histogram type both aggregation paths fill, and the only code that
// knows the kernel's bucket layout (bpf/funclatency.h, included by the .cpp
// alone, which checks the constants below against it): the fine buckets, the
// log2 rows they sum to, and the rows' edges every output uses. count, sum,
// min and max are exact; fine buckets bound percentile error; log2 rows are
// exact sums of fine buckets.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace funclatency {

struct Log2Row {
  uint32_t row = 0;        // libbpf-tools' slot
  uint64_t low_unit = 0;   // inclusive, in the display unit
  uint64_t high_unit = 0;  // inclusive, in the display unit
  uint64_t count = 0;
};

class LatencyHistogram {
 public:
  // The kernel's layout: fine buckets (FL_NUM_BUCKETS) and log2 rows
  // (FL_LOG2_ROWS); calls too long for the last row are counted in it.
  static constexpr uint32_t kNumBuckets = 720;
  static constexpr uint32_t kLog2Rows = 48;
  // Every row's count, indexed by row.
  using RowCounts = std::array<uint64_t, kLog2Rows>;

  // Edges of log2 row `row` in the display unit: row 0 holds [0, 2), row r
  // holds [2^r, 2^(r+1)). Low and high inclusive; `row_end` is the exclusive
  // upper edge (the next row's low edge, 2 for row 0).
  static constexpr uint64_t row_low(uint32_t row) { return row == 0 ? 0 : uint64_t{1} << row; }
  static constexpr uint64_t row_end(uint32_t row) { return uint64_t{1} << (row + 1); }
  static constexpr uint64_t row_high(uint32_t row) { return row_end(row) - 1; }
  // The row holding `value` display units, by the edges above (not capped at
  // the last row: arithmetic on rows read back from a file may go past it).
  static constexpr uint32_t row_of(uint64_t value) {
    return value < 2 ? 0 : static_cast<uint32_t>(std::bit_width(value) - 1);
  }
  // The smallest value, in display units, that fine bucket `bucket` holds.
  static uint64_t bucket_low(uint32_t bucket);

  LatencyHistogram() = default;
  explicit LatencyHistogram(uint64_t unit_ns) : unit_ns_(unit_ns) {}

  // The events path: one completed call.
  void record(uint64_t duration_ns);
  // The kernel path: a delta of in-kernel totals. min/max are those of the
  // calls in the delta when known (0 = unknown, not applied).
  void add_counts(std::span<const uint64_t, kNumBuckets> buckets, uint64_t count, uint64_t sum_ns,
                  uint64_t min_ns, uint64_t max_ns);
  void merge(const LatencyHistogram& other);
  // The calls in this running total that are not in `earlier`, an earlier
  // value of the same total: the difference of every count and of the sum,
  // min and max unknown. Nothing when `earlier` is not below this one in
  // every count (totals only grow: it was another total, or one restarted).
  std::optional<LatencyHistogram> since(const LatencyHistogram& earlier) const;
  // As since(), for two reads of a total that keeps its own running min/max
  // (the kernel's): an extreme that moved since `earlier` is a call of the
  // difference; one that did not is bounded by the difference's lowest
  // (highest) non-empty fine bucket and the total's own extreme. A bound for
  // printing an interval, not a measurement: OTLP keeps since().
  std::optional<LatencyHistogram> since_with_bounds(const LatencyHistogram& earlier) const;
  void clear();

  uint64_t unit_ns() const { return unit_ns_; }
  uint64_t count() const { return count_; }
  uint64_t sum_ns() const { return sum_ns_; }
  // The shortest and longest call where known: nullopt without calls, or
  // when they are not known (a histogram made only of add_counts without
  // min/max, such as a difference of totals, since()). OTLP sends only these.
  std::optional<uint64_t> known_min_ns() const;
  std::optional<uint64_t> known_max_ns() const;
  // As printed: 0 without calls; UINT64_MAX and 0 when not known.
  uint64_t min_ns() const { return count_ ? min_ns_ : 0; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const { return count_ ? static_cast<double>(sum_ns_) / count_ : 0.0; }
  // Every fine bucket's count (all zero before the first call).
  std::span<const uint64_t, kNumBuckets> buckets() const;

  // Estimated duration at quantile q in [0, 1]: the middle of the fine
  // bucket holding it, clamped to [min, max] when they are known. Relative
  // error <= 1/32 above 32 display units; at most half a unit below.
  uint64_t percentile_ns(double q) const;

  // Non-empty rows from the lowest to the highest non-empty one, empty rows
  // in between included (as funclatency prints them).
  std::vector<Log2Row> log2_rows() const;
  // Every row's count, indexed by row.
  RowCounts log2_counts() const;

  // The calls by power of two of the display unit (OTLP's exponential
  // histogram at scale 0): `below_one` under 1 unit, by_exponent[i] in
  // [2^i, 2^(i+1)) units. Index i >= 1 is log2 row i; row 0 is split into
  // below_one and index 0 (1 unit), which the fine buckets keep apart.
  struct PowerOfTwoCounts {
    uint64_t below_one = 0;
    RowCounts by_exponent{};
  };
  PowerOfTwoCounts power_of_two_counts() const;

 private:
  uint64_t unit_ns_ = 1000;
  uint64_t count_ = 0;
  uint64_t sum_ns_ = 0;
  uint64_t min_ns_ = UINT64_MAX;
  uint64_t max_ns_ = 0;
  // Allocated on the first call: a pattern matches hundreds of functions and
  // most of them are never called while traced.
  std::vector<uint64_t> buckets_;
};

}  // namespace funclatency
