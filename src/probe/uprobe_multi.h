// BPF_LINK_CREATE for uprobe_multi links (attach type 48, kernel 6.6+): one
// link attaches a program at many offsets of one file, each with its own
// cookie. Debian 12's libbpf 1.1 predates them, so this is the one place
// that issues the raw syscall.
//
// Besides attaching hundreds of functions in one call, a uprobe_multi
// program runs without the per-CPU bpf_prog_active guard that perf-event
// uprobes go through: there, a probe hit on a CPU where any process is in
// the middle of a BPF map syscall is silently skipped.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/error.h"

namespace funclatency {

inline constexpr uint32_t kAttachTypeUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI

// Returns the link's fd; closing it detaches every probe of the link.
Result<int> create_uprobe_multi_link(int program_fd, const std::string& path,
                                     std::span<const uint64_t> offsets,
                                     std::span<const uint64_t> cookies, bool return_probe, int pid);

}  // namespace funclatency
