// Why: a call that never returns is counted lost by the probes only when a
// later call of the same goroutine shows its frame abandoned (a panic
// recovered in a caller). The last such call of a goroutine whose process
// then exits was counted nowhere. Frames still open in the goroutines'
// shadow stacks (the go_stacks map) of a process that is gone can never
// return: this counts them lost and deletes them (no probe can write a
// stack of a process that is gone). Frames of a process still running are
// calls in flight, left alone, as a thread's are.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "common/error.h"

namespace funclatency {

// Whether process `tgid` has exited: no /proc entry, or a zombie (its
// threads are gone, its parent has not waited for it yet).
bool process_gone(uint32_t tgid, const char* proc_root = "/proc");

// Deletes the go_stacks entries (map fd `go_stacks_fd`) of processes `gone`
// says have exited, and returns how many frames each function had open in
// them. kRuntime with errno when the map cannot be read.
Result<std::map<uint32_t, uint64_t>> take_open_go_frames_of_exited(
    int go_stacks_fd, const std::function<bool(uint32_t tgid)>& gone);

}  // namespace funclatency
