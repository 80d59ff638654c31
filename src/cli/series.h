// Who is slow: the --by series settings and the -c cgroup filter's
// directories, the I/O a run needs for them (naming cgroups, checking that a
// process still runs, opening cgroup v2 directories).
#pragma once

#include <string>

#include "cli/config.h"
#include "collect/aggregator.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace funclatency {

// A cgroup v2 directory opened for the kernel's filter (absolute, or
// relative to the v2 mount); anything else (a missing path, a v1 hierarchy,
// a file) is one clear kBadInput naming the v2 mount.
Result<UniqueFd> open_cgroup_v2(const std::string& path);

// Series by cgroup (--by cgroup, the agent's default) are named from the
// cgroup v2 tree: its paths give the container and pod labels. Without a
// cgroup2 mount every series would be an unnamed "cgroup id N", so the run
// is refused before anything is attached, in one kBadInput.
Result<void> check_cgroup_tree(const Config& config);

// How the aggregator splits calls into series: labels from the cgroup v2
// hierarchy (path, container id, pod UID) and liveness from kill(pid, 0).
SeriesOptions series_options(const Config& config);

}  // namespace funclatency
