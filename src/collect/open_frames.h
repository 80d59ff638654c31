// Why: a call that never returns is counted lost by the probes only when a
// later call of the same goroutine shows its frame abandoned (a panic
// recovered in a caller). The last such call of a goroutine that then ends,
// or whose process exits, was counted nowhere, and its shadow stack (the
// go_stacks map, which the probes empty only when a goroutine's outermost
// traced call returns) would keep its room. Frames still open in the stack
// of a process that is gone, or of a goroutine whose g now holds another
// goid (the runtime reuses a g for a new goroutine), can never return: this
// counts them lost and deletes them (no probe writes a stack of a goroutine
// that ended). Frames of a goroutine still running are calls in flight,
// left alone, as a thread's are.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "common/error.h"

namespace funclatency {

// Whether process `tgid` has exited: no /proc entry, or a zombie (its
// threads are gone, its parent has not waited for it yet).
bool process_gone(uint32_t tgid, const char* proc_root = "/proc");

// The 8 bytes at `address` in process `tgid` (a goroutine's goid), or none
// when they cannot be read (the process is gone, or not readable).
std::optional<uint64_t> read_goid(uint32_t tgid, uint64_t address);

// Deletes the go_stacks entries (map fd `go_stacks_fd`) of processes `gone`
// says have exited and of goroutines that ended (`goid_at` reads another goid
// where the stack's goid lies), and returns how many frames each function had
// open in them. kRuntime with errno when the map cannot be read.
Result<std::map<uint32_t, uint64_t>> take_open_go_frames_of_ended(
    int go_stacks_fd, const std::function<bool(uint32_t tgid)>& gone,
    const std::function<std::optional<uint64_t>(uint32_t tgid, uint64_t address)>& goid_at =
        read_goid);

}  // namespace funclatency
