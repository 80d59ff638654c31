// One JSON object per line per function: "interval" records as they happen
// and a "total" record per function at exit. With --cpu-split, objects
// "oncpu", "runnable" and "blocked" carry each part's histogram with the
// wall histogram's fields (count, sum_ns, ..., log2_buckets); with --self,
// object "self" the histogram of the calls' exclusive time. With --by a
// record is one series of its function: "pid", "comm", "cgroup",
// "container_id" and "pod_uid" where set, "series":"other" for the calls
// folded over --max-series, and "series_folded" (how many series were, so
// far) once any was.
//
// --slowest K: "exemplars", the record's slowest calls (of the interval in an
// "interval" record, of the run in a "total" one), slowest first: duration_ns,
// pid, tid, thread, time_unix_nano, with --cpu-split runnable_ns and
// blocked_ns where known, and "stack" (innermost first) of {address ("0x..."),
// symbol, offset, binary}, each field only where known. "slow_dropped" counts
// the slow calls whose record did not fit the ring buffer (set when non-zero
// or when the record has exemplars). Durations are in ns like every other
// field of a record, so there is no value in a display unit.
//
// --slower-than: a {"type":"slow_call", "time", "symbol", "binary",
// "threshold_ns", ...the exemplar's fields} line per call as it ends.
// `funclatency report`/`diff` skip record types they do not know.
#pragma once

#include <cstdio>
#include <string>

#include "model/sink.h"
#include "output/stream_sink.h"

namespace funclatency {

class JsonSink : public StreamSink {
 public:
  explicit JsonSink(std::FILE* out) : StreamSink(out) {}
  void write(const Report& report) override;
  void write_slow_call(const SlowCallReport& slow) override;
};

}  // namespace funclatency
