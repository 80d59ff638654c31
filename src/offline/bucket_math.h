// Arithmetic on the log2 rows a run wrote: which row a bucket is, the run's
// unit, merging histograms and estimating percentiles from rows alone (the
// fine buckets stay in the tool; only their log2 sums reach the file).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "offline/run_reader.h"

namespace funclatency::offline {

// Counts indexed by log2 row (row 0 = [0, 2) units, row r = [2^r, 2^(r+1))).
using RecordedRows = std::vector<uint64_t>;

// The unit (1, 1000 or 1000000 ns) whose rows these buckets are, 0 when there
// are no buckets, nullopt when they are no unit's log2 rows.
std::optional<uint64_t> unit_of_buckets(const std::vector<Bucket>& buckets);

uint32_t row_of(uint64_t low_ns, uint64_t unit_ns);
uint64_t row_low_ns(uint32_t row, uint64_t unit_ns);
uint64_t row_high_ns(uint32_t row, uint64_t unit_ns);  // inclusive

RecordedRows row_counts(const RecordedHistogram& histogram, uint64_t unit_ns);
void add_rows(RecordedRows& into, const RecordedRows& from);
uint64_t total_of(const RecordedRows& rows);

// count, sum, min and max of both; rows added; recorded percentiles dropped.
RecordedHistogram merged(const RecordedHistogram& a, const RecordedHistogram& b, uint64_t unit_ns);

// The duration at quantile q estimated from rows: geometric interpolation
// inside the row holding it (linear in row 0), clamped to [min_ns, max_ns]
// when max_ns > 0. 0 for no calls.
double estimate_quantile_ns(const RecordedRows& rows, uint64_t unit_ns, double q,
                            uint64_t min_ns = 0, uint64_t max_ns = 0);

// The recorded p50/p95/p99 when the record has it (q = 0.50, 0.95, 0.99),
// else the estimate from rows.
double quantile_ns(const RecordedHistogram& histogram, uint64_t unit_ns, double q);

}  // namespace funclatency::offline
