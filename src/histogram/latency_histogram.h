// The one histogram type both aggregation paths fill. count, sum, min and
// max are exact; fine buckets (see funclatency.h) bound percentile error;
// log2 rows are exact sums of fine buckets.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

struct Log2Row {
  uint32_t row = 0;        // libbpf-tools' slot
  uint64_t low_unit = 0;   // inclusive, in the display unit
  uint64_t high_unit = 0;  // inclusive, in the display unit
  uint64_t count = 0;
};

class LatencyHistogram {
 public:
  static constexpr uint32_t kNumBuckets = FL_NUM_BUCKETS;

  LatencyHistogram() = default;
  explicit LatencyHistogram(uint64_t unit_ns) : unit_ns_(unit_ns) {}

  // The events path: one completed call.
  void record(uint64_t duration_ns);
  // The kernel path: a delta of in-kernel totals. min/max are those of the
  // calls in the delta when known (0 = unknown, not applied).
  void add_counts(std::span<const uint64_t, kNumBuckets> buckets, uint64_t count, uint64_t sum_ns,
                  uint64_t min_ns, uint64_t max_ns);
  void merge(const LatencyHistogram& other);
  void clear();

  uint64_t unit_ns() const { return unit_ns_; }
  uint64_t count() const { return count_; }
  uint64_t sum_ns() const { return sum_ns_; }
  uint64_t min_ns() const { return count_ ? min_ns_ : 0; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const { return count_ ? static_cast<double>(sum_ns_) / count_ : 0.0; }
  // Every fine bucket's count (all zero before the first call).
  std::span<const uint64_t, kNumBuckets> buckets() const;

  // Estimated duration at quantile q in [0, 1]: the middle of the fine
  // bucket holding it, clamped to [min, max]. Relative error <= 1/32 above
  // 32 display units; at most half a unit below.
  uint64_t percentile_ns(double q) const;

  // Non-empty rows from the lowest to the highest non-empty one, empty rows
  // in between included (as funclatency prints them).
  std::vector<Log2Row> log2_rows() const;
  // Every row's count, indexed by row.
  std::array<uint64_t, FL_LOG2_ROWS> log2_counts() const;

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

// Inclusive bounds of log2 row `row` in the display unit.
inline uint64_t log2_row_low(uint32_t row) {
  return row == 0 ? 0 : (uint64_t{1} << row);
}
inline uint64_t log2_row_high(uint32_t row) {
  return (uint64_t{1} << (row + 1)) - 1;
}

}  // namespace funclatency
