// Reads the JSON lines a run wrote (--json) back into values: one Series per
// traced function (and per pid/comm/cgroup when the run split them), with its
// interval records and its total. Strict about what it needs (file:line on
// anything malformed or truncated), silent about fields it does not know.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace funclatency::offline {

// One non-empty log2 row of a record, edges in ns (high inclusive).
struct Bucket {
  uint64_t low_ns = 0;
  uint64_t high_ns = 0;
  uint64_t count = 0;
};

// The histogram fields of a record (the wall time, or one CPU-split part).
struct RecordedHistogram {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  // As the tool computed them from its fine buckets; absent in old records.
  std::optional<uint64_t> p50_ns, p95_ns, p99_ns;
  std::vector<Bucket> buckets;  // ascending, as written
};

struct RecordedLost {
  uint64_t total = 0, unreturned = 0, depth = 0, ringbuf = 0;
};

// One of the slowest calls, as the run described it (fields vary by version).
struct Exemplar {
  std::optional<uint64_t> duration_ns;
  std::string description;  // the other fields, "key=value ..."
};

enum class RecordType { kInterval, kTotal };

struct Record {
  size_t line = 0;  // 1-based line in the file
  RecordType type = RecordType::kInterval;
  std::string time;               // RFC 3339, as written
  std::optional<double> epoch_s;  // parsed from `time` when it parses
  std::string mode;               // "events", "kernel", "mixed", or empty
  RecordedHistogram wall;
  RecordedLost lost;
  std::optional<RecordedHistogram> oncpu, runnable, blocked;  // --cpu-split
  std::optional<RecordedHistogram> self;                      // --self: the calls' exclusive time
  std::vector<Exemplar> exemplars;
};

// What tells series apart: the function, and the per-series fields if any.
struct RecordedSeriesKey {
  std::string symbol;
  std::string binary;
  std::optional<int64_t> pid;
  std::string comm;
  std::string cgroup;
  // --by retval/argN: the class ("error", "-EAGAIN"), or argument N's bucket.
  std::string retval;
  std::optional<int64_t> arg_index;
  std::string arg;

  // "slow_op (target-app, pid 12)", "open (libc.so.6, retval -ENOENT)"
  std::string label() const;
  bool operator==(const RecordedSeriesKey&) const = default;
};

struct Series {
  RecordedSeriesKey key;
  std::vector<Record> intervals;  // in file order
  std::optional<Record> total;
};

struct Run {
  std::string name;      // the file, for messages
  uint64_t unit_ns = 0;  // the run's display unit: 1, 1000 or 1000000
  std::vector<Series> series;
  size_t interval_records = 0;
};

// Parses a whole file's text. `name` prefixes every message ("run.ndjson:7: ...").
Result<Run> parse_run(std::string_view text, std::string_view name);
// Reads and parses a file.
Result<Run> read_run_file(const std::string& path);

// The display unit's short name: "ns", "us", "ms".
std::string_view unit_name(uint64_t unit_ns);
// The part of a path after its last '/'.
std::string_view basename_of(std::string_view path);

}  // namespace funclatency::offline
