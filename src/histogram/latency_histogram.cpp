// The histogram over the kernel's fine buckets (see latency_histogram.h):
// the one translation unit that reads the layout from bpf/funclatency.h.
#include "histogram/latency_histogram.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

static_assert(LatencyHistogram::kNumBuckets == FL_NUM_BUCKETS);
static_assert(LatencyHistogram::kLog2Rows == FL_LOG2_ROWS);

namespace {
constexpr std::array<uint64_t, LatencyHistogram::kNumBuckets> kNoCalls{};
}  // namespace

std::span<const uint64_t, LatencyHistogram::kNumBuckets> LatencyHistogram::buckets() const {
  if (buckets_.empty()) return kNoCalls;
  return std::span<const uint64_t, kNumBuckets>(buckets_.data(), kNumBuckets);
}

uint64_t LatencyHistogram::bucket_low(uint32_t bucket) {
  return fl_bucket_low(bucket);
}

std::optional<uint64_t> LatencyHistogram::known_min_ns() const {
  if (count_ == 0 || min_ns_ == UINT64_MAX) return std::nullopt;
  return min_ns_;
}

std::optional<uint64_t> LatencyHistogram::known_max_ns() const {
  if (!known_min_ns()) return std::nullopt;
  return max_ns_;
}

void LatencyHistogram::record(uint64_t duration_ns) {
  if (buckets_.empty()) buckets_.resize(kNumBuckets);
  uint32_t bucket = fl_bucket_of(fl_in_units(duration_ns, unit_ns_));
  buckets_[std::min(bucket, kNumBuckets - 1)]++;
  count_++;
  sum_ns_ += duration_ns;
  min_ns_ = std::min(min_ns_, duration_ns);
  max_ns_ = std::max(max_ns_, duration_ns);
}

void LatencyHistogram::add_counts(std::span<const uint64_t, kNumBuckets> buckets, uint64_t count,
                                  uint64_t sum_ns, uint64_t min_ns, uint64_t max_ns) {
  if (count == 0) return;
  if (buckets_.empty()) buckets_.resize(kNumBuckets);
  for (uint32_t i = 0; i < kNumBuckets; i++) buckets_[i] += buckets[i];
  count_ += count;
  sum_ns_ += sum_ns;
  if (min_ns != 0) min_ns_ = std::min(min_ns_, min_ns);
  max_ns_ = std::max(max_ns_, max_ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  // add_counts reads a 0 minimum as unknown; a merged minimum is known, and
  // may be 0 (a call that never left the CPU has 0 us runnable).
  add_counts(other.buckets(), other.count_, other.sum_ns_, 0, other.max_ns_);
  min_ns_ = std::min(min_ns_, other.min_ns_);
}

std::optional<LatencyHistogram> LatencyHistogram::since(const LatencyHistogram& earlier) const {
  if (count_ < earlier.count_ || sum_ns_ < earlier.sum_ns_) return std::nullopt;
  std::vector<uint64_t> buckets(kNumBuckets);
  const auto now = this->buckets();
  const auto before = earlier.buckets();
  for (uint32_t i = 0; i < kNumBuckets; i++) {
    if (now[i] < before[i]) return std::nullopt;
    buckets[i] = now[i] - before[i];
  }
  // min/max of the difference are unknown; without calls it stays empty.
  LatencyHistogram difference(unit_ns_);
  if (count_ == earlier.count_) return difference;
  difference.buckets_ = std::move(buckets);
  difference.count_ = count_ - earlier.count_;
  difference.sum_ns_ = sum_ns_ - earlier.sum_ns_;
  return difference;
}

std::optional<LatencyHistogram> LatencyHistogram::since_with_bounds(
    const LatencyHistogram& earlier) const {
  std::optional<LatencyHistogram> difference = since(earlier);
  if (!difference || difference->count_ == 0) return difference;
  const auto buckets = difference->buckets();
  auto nonzero = [](uint64_t c) { return c != 0; };
  auto first = std::find_if(buckets.begin(), buckets.end(), nonzero);
  auto last = std::find_if(buckets.rbegin(), buckets.rend(), nonzero);
  if (min_ns_ != earlier.min_ns_) {
    difference->min_ns_ = min_ns_;
  } else if (first != buckets.end()) {
    auto first_bucket = static_cast<uint32_t>(first - buckets.begin());
    difference->min_ns_ = std::max(known_min_ns().value_or(0), bucket_low(first_bucket) * unit_ns_);
  }
  if (max_ns_ != earlier.max_ns_) {
    difference->max_ns_ = max_ns_;
  } else if (first != buckets.end()) {
    auto last_bucket = static_cast<uint32_t>(buckets.rend() - last - 1);
    uint64_t high =
        last_bucket + 1 < kNumBuckets ? bucket_low(last_bucket + 1) * unit_ns_ - 1 : max_ns_;
    difference->max_ns_ = std::min(max_ns_, high);
  }
  return difference;
}

void LatencyHistogram::clear() {
  *this = LatencyHistogram(unit_ns_);
}

uint64_t LatencyHistogram::percentile_ns(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the wanted call, 1-based, as "the smallest value with at least
  // q of the calls at or below it".
  uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * count_)));
  uint64_t seen = 0;
  for (uint32_t i = 0; i < buckets_.size(); i++) {
    seen += buckets_[i];
    if (seen < rank) continue;
    uint64_t low_unit = fl_bucket_low(i);
    uint64_t high_unit_excl = i + 1 < kNumBuckets ? fl_bucket_low(i + 1) : low_unit * 2;
    // The bucket covers durations [low_unit, high_unit_excl) * unit_ns.
    uint64_t mid_ns = (low_unit + high_unit_excl) * unit_ns_ / 2;
    if (!known_min_ns()) return mid_ns;
    return std::clamp(mid_ns, *known_min_ns(), *known_max_ns());
  }
  return max_ns_;
}

LatencyHistogram::RowCounts LatencyHistogram::log2_counts() const {
  RowCounts rows{};
  for (uint32_t i = 0; i < buckets_.size(); i++) {
    if (buckets_[i]) rows[fl_row_of_bucket(i)] += buckets_[i];
  }
  return rows;
}

std::vector<Log2Row> LatencyHistogram::log2_rows() const {
  auto counts = log2_counts();
  int first = -1, last = -1;
  for (int r = 0; r < static_cast<int>(kLog2Rows); r++) {
    if (!counts[r]) continue;
    if (first < 0) first = r;
    last = r;
  }
  std::vector<Log2Row> rows;
  if (first < 0) return rows;
  for (int r = first; r <= last; r++) {
    auto row = static_cast<uint32_t>(r);
    rows.push_back(Log2Row{row, row_low(row), row_high(row), counts[r]});
  }
  return rows;
}

LatencyHistogram::PowerOfTwoCounts LatencyHistogram::power_of_two_counts() const {
  PowerOfTwoCounts counts;
  for (uint32_t i = 0; i < buckets_.size(); i++) {
    if (buckets_[i] == 0) continue;
    uint64_t low = fl_bucket_low(i);
    if (low == 0) {
      counts.below_one += buckets_[i];
    } else {
      counts.by_exponent[fl_log2(low)] += buckets_[i];
    }
  }
  return counts;
}

}  // namespace funclatency
