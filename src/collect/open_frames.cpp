// Why: see open_frames.h. Counting the frames of goroutines that ended, or
// whose process exited, from user space keeps the probes as they are.
#include "collect/open_frames.h"

#include <bpf/bpf.h>
#include <fmt/format.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bpf/funclatency.h"
#include "collect/hash_keys.h"

namespace funclatency {

bool process_gone(uint32_t tgid, const char* proc_root) {
  std::ifstream stat(fmt::format("{}/{}/stat", proc_root, tgid));
  std::string text;
  if (!stat || !std::getline(stat, text)) return true;
  // "PID (COMM) STATE ...": COMM may hold anything, ')' included.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

std::optional<uint64_t> read_goid(uint32_t tgid, uint64_t address) {
  uint64_t goid = 0;
  iovec local{.iov_base = &goid, .iov_len = sizeof(goid)};
  iovec remote{.iov_base = reinterpret_cast<void*>(address), .iov_len = sizeof(goid)};
  if (address == 0 ||
      process_vm_readv(static_cast<pid_t>(tgid), &local, 1, &remote, 1, 0) != sizeof(goid)) {
    return std::nullopt;
  }
  return goid;
}

Result<std::map<uint32_t, uint64_t>> take_open_go_frames_of_ended(
    int go_stacks_fd, const std::function<bool(uint32_t tgid)>& gone,
    const std::function<std::optional<uint64_t>(uint32_t tgid, uint64_t address)>& goid_at) {
  // Every process's stacks: those of a process still running are looked at
  // one by one (has their goroutine ended?).
  std::map<uint32_t, bool> gone_by_tgid;
  return count_keys_of_processes<fl_go_key>(
      go_stacks_fd,
      [&](uint32_t tgid) {
        gone_by_tgid[tgid] = gone(tgid);
        return true;
      },
      "goroutine stacks (go_stacks)",
      [&](const fl_go_key& key, std::map<uint32_t, uint64_t>& open_frames) -> Result<void> {
        fl_go_stack stack{};
        if (bpf_map_lookup_elem(go_stacks_fd, &key, &stack) != 0) {
          if (errno == ENOENT) return {};  // its call returned meanwhile
          return runtime_error(fmt::format("read the goroutine stack of process {} goroutine {}",
                                           key.tgid, key.goid),
                               errno);
        }
        if (!gone_by_tgid[key.tgid]) {
          // Running, or not readable (not yet known where its goid lies): in flight.
          const auto goid = goid_at(key.tgid, stack.goid_at);
          if (!goid || *goid == key.goid) return {};
        }
        for (uint32_t depth = 0; depth < stack.depth && depth < FL_GO_MAX_DEPTH; ++depth) {
          open_frames[stack.frames[depth].fn_id]++;
        }
        // Counted once: deleted, or (ENOENT) taken meanwhile.
        if (bpf_map_delete_elem(go_stacks_fd, &key) != 0 && errno != ENOENT) {
          return runtime_error(fmt::format("delete the goroutine stack of process {} goroutine {}",
                                           key.tgid, key.goid),
                               errno);
        }
        return {};
      });
}

}  // namespace funclatency
