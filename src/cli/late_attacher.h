// With -p and --wait-for-library: watches the process for the libraries
// TARGETs await, attaches their functions as the libraries appear (links
// join the run's, so they detach with the rest) and gives each a report
// group. Owns the LibraryWatch; the session calls it through attach_late.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/config.h"
#include "cli/messages.h"
#include "collect/aggregator.h"
#include "common/error.h"
#include "probe/library_watch.h"
#include "probe/uprobe_links.h"

namespace funclatency {

class LateAttacher {
 public:
  // `resolver` and `planner` (those that placed the functions attached up
  // front), `probes`, `aggregator` and `config` must outlive it.
  LateAttacher(const Config& config, std::vector<TargetSpec> waiting, WatchOptions options,
               std::set<std::pair<std::string, uint64_t>> already_traced,
               ElfSymbolResolver& resolver, ProbePlanner& planner, TracingProbes& probes,
               Aggregator& aggregator, Messages messages);

  // True while some TARGET's library has not appeared.
  bool waiting() const { return !watch_.empty(); }
  const std::vector<TargetSpec>& pending() const { return watch_.pending(); }

  // Attaches what the libraries loaded since the last poll hold; returns
  // the new function ids.
  Result<std::vector<uint32_t>> poll();
  // For SessionOptions::attach_late: poll(), or empty when nothing is awaited.
  std::function<Result<std::vector<uint32_t>>()> callback();

 private:
  const Config& config_;
  LibraryWatch watch_;
  TracingProbes& probes_;
  Aggregator& aggregator_;
  Messages messages_;
};

}  // namespace funclatency
