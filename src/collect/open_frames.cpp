// Why: see open_frames.h. Counting the frames of goroutines whose process
// exited from user space keeps the probes as they are.
#include "collect/open_frames.h"

#include <bpf/bpf.h>
#include <fmt/format.h>

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

Result<std::map<uint32_t, uint64_t>> take_open_go_frames_of_exited(
    int go_stacks_fd, const std::function<bool(uint32_t tgid)>& gone) {
  return count_keys_of_processes<fl_go_key>(
      go_stacks_fd, gone, "goroutine stacks (go_stacks)",
      [&](const fl_go_key& key, std::map<uint32_t, uint64_t>& open_frames) -> Result<void> {
        fl_go_stack stack{};
        if (bpf_map_lookup_elem(go_stacks_fd, &key, &stack) != 0) {
          if (errno == ENOENT) return {};  // the LRU reused it meanwhile
          return runtime_error(fmt::format("read the goroutine stack of process {} goroutine {}",
                                           key.tgid, key.goid),
                               errno);
        }
        for (uint32_t depth = 0; depth < stack.depth && depth < FL_GO_MAX_DEPTH; ++depth) {
          open_frames[stack.frames[depth].fn_id]++;
        }
        // Counted once: deleted, or (ENOENT) already reused by the LRU.
        if (bpf_map_delete_elem(go_stacks_fd, &key) != 0 && errno != ENOENT) {
          return runtime_error(
              fmt::format("delete the goroutine stack of exited process {}", key.tgid), errno);
        }
        return {};
      });
}

}  // namespace funclatency
