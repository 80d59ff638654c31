// Why: open_frames and span_open both take, from a BPF hash the probes
// write, the keys of processes user space has decided about (exited, or the
// run ended). A walk of a hash that changes may start over, so each key is
// kept once; the decision is asked once a process. One walk serves both.
#pragma once

#include <bpf/bpf.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"

namespace funclatency {

// The keys of BPF hash `fd` (keys of type Key, with a `tgid` field) whose
// process `take` picks, each once. kRuntime with errno, naming `what`, when
// the walk fails.
template <typename Key>
Result<std::vector<Key>> keys_of_processes(int fd, const std::function<bool(uint32_t tgid)>& take,
                                           const std::string& what) {
  std::vector<Key> taken;
  std::map<uint32_t, bool> take_by_tgid;  // one look per process
  // The kernel tells keys apart by their bytes: so does this.
  std::set<std::array<unsigned char, sizeof(Key)>> seen;
  Key key{};
  Key next{};
  const Key* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    key = next;
    previous = &key;
    auto known = take_by_tgid.find(key.tgid);
    if (known == take_by_tgid.end()) known = take_by_tgid.emplace(key.tgid, take(key.tgid)).first;
    std::array<unsigned char, sizeof(Key)> bytes;
    std::memcpy(bytes.data(), &key, sizeof(Key));
    if (known->second && seen.insert(bytes).second) taken.push_back(key);
  }
  if (errno != ENOENT) return runtime_error("walk the " + what, errno);
  return taken;
}

}  // namespace funclatency
