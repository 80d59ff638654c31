// The records of `funclatency --json` (JSON lines): their types and field
// names, written by output/json_sink.cpp and read back by the offline
// commands (offline/run_reader.cpp). One list, so a field is named once for
// the writer and the reader. The fields' meaning: output/json_sink.h.
#pragma once

namespace funclatency::json_record {

// "type": what a line is.
inline constexpr const char* kType = "type";
inline constexpr const char* kInterval = "interval";
inline constexpr const char* kTotal = "total";
inline constexpr const char* kAgent = "agent";
inline constexpr const char* kSlowCall = "slow_call";

// A function's record (interval or total).
inline constexpr const char* kTime = "time";
inline constexpr const char* kSymbol = "symbol";
inline constexpr const char* kBinary = "binary";
inline constexpr const char* kMode = "mode";
inline constexpr const char* kLost = "lost";
inline constexpr const char* kLostUnreturned = "lost_unreturned";
inline constexpr const char* kLostDepth = "lost_depth";
inline constexpr const char* kLostRingbuf = "lost_ringbuf";
// Spans: "kind" is "span" (symbol is the span's name), and the spans lost
// by reason; span_unstarted counts ends without a start (not spans).
inline constexpr const char* kKind = "kind";
inline constexpr const char* kSpanKind = "span";
inline constexpr const char* kLostSpanReused = "lost_span_reused";
inline constexpr const char* kLostSpanFull = "lost_span_full";
inline constexpr const char* kLostSpanOpen = "lost_span_open";
inline constexpr const char* kSpanUnstarted = "span_unstarted";

// A histogram: the wall one in the record itself, the others in objects.
inline constexpr const char* kCount = "count";
inline constexpr const char* kSumNs = "sum_ns";
inline constexpr const char* kMinNs = "min_ns";
inline constexpr const char* kMaxNs = "max_ns";
inline constexpr const char* kP50Ns = "p50_ns";
inline constexpr const char* kP95Ns = "p95_ns";
inline constexpr const char* kP99Ns = "p99_ns";
inline constexpr const char* kLog2Buckets = "log2_buckets";    // [low_ns, high_ns, count] rows
inline constexpr const char* kOncpu = "oncpu";                 // --cpu-split
inline constexpr const char* kRunnable = "runnable";           // --cpu-split
inline constexpr const char* kBlocked = "blocked";             // --cpu-split
inline constexpr const char* kSplitUnknown = "split_unknown";  // --cpu-split
inline constexpr const char* kSelf = "self";                   // --self

// Which series of the function (-p, --by, --config).
inline constexpr const char* kPid = "pid";
inline constexpr const char* kComm = "comm";
inline constexpr const char* kCgroup = "cgroup";
inline constexpr const char* kContainerId = "container_id";
inline constexpr const char* kPodUid = "pod_uid";
inline constexpr const char* kRuntime = "runtime";
inline constexpr const char* kRetval = "retval";
inline constexpr const char* kArg = "arg";
inline constexpr const char* kArgIndex = "arg_index";
inline constexpr const char* kLabels = "labels";
inline constexpr const char* kSeries = "series";  // "other": over --max-series
inline constexpr const char* kSeriesFolded = "series_folded";
// A series' last record (its processes gone, no call for --series-expiry),
// and how many series ended so far (the agent's record).
inline constexpr const char* kSeriesEnded = "series_ended";
inline constexpr const char* kSeriesExpired = "series_expired";
inline constexpr const char* kKernelMemoryBytes = "kernel_memory_bytes";

// --slowest/--slower-than: a slow call, in "exemplars" or a slow_call line.
inline constexpr const char* kExemplars = "exemplars";
inline constexpr const char* kSlowDropped = "slow_dropped";
inline constexpr const char* kThresholdNs = "threshold_ns";
inline constexpr const char* kDurationNs = "duration_ns";
inline constexpr const char* kTid = "tid";
inline constexpr const char* kThread = "thread";
inline constexpr const char* kTimeUnixNano = "time_unix_nano";
inline constexpr const char* kRunnableNs = "runnable_ns";
inline constexpr const char* kBlockedNs = "blocked_ns";
inline constexpr const char* kStack = "stack";
inline constexpr const char* kAddress = "address";  // a frame's
inline constexpr const char* kOffset = "offset";    // a frame's, from its symbol

}  // namespace funclatency::json_record
