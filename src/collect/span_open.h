// Why: a span still open when its process exits, or when the run ends, will
// never see its end; the probes cannot tell, so user space counts each such
// span lost (LostCounts::span_open) and deletes its key. Keys of processes
// that exited are taken at every interval's end (no probe can write them
// again, and they would hold room in the bounded map), all keys at the end
// of the run. A by-value span that may cross processes has no process in
// its key: it is taken only at the end. The probes' own counts of spans
// lost (span_lost) are read here too: what user space learns of spans.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "common/error.h"
#include "model/report.h"

namespace funclatency {

// Deletes the open_spans entries (map fd `open_spans_fd`) whose process
// `take` says to take (tgid 0: no process in the key), and returns how many
// each span function id had. kRuntime with errno when the map cannot be read.
Result<std::map<uint32_t, uint64_t>> take_open_spans(
    int open_spans_fd, const std::function<bool(uint32_t tgid)>& take);

// The probes' counts of each of `spans` spans (span_lost, per CPU, summed):
// span_reused, span_full and span_unstarted of a LostCounts, by span index.
Result<std::vector<LostCounts>> read_span_lost(int span_lost_fd, uint32_t spans);

}  // namespace funclatency
