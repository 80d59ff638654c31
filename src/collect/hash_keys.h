// Why: open_frames and span_open both take, from a BPF hash the probes
// write, the keys of processes user space has decided about (exited, or the
// run ended). A walk of a hash that changes may start over, so each key is
// kept once; the decision is asked once a process. One walk serves both, and
// so does the count by function id of what the keys held.
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

// The keys of processes `take` picks (keys_of_processes), each handed to
// `count` with the counts by function id so far; returns those counts, or
// the first error `count` returns. `count(const Key&, std::map<uint32_t,
// uint64_t>&)` returns Result<void>.
template <typename Key, typename Count>
Result<std::map<uint32_t, uint64_t>> count_keys_of_processes(
    int fd, const std::function<bool(uint32_t tgid)>& take, const std::string& what,
    const Count& count) {
  auto taken = keys_of_processes<Key>(fd, take, what);
  if (!taken) return std::unexpected(taken.error());
  std::map<uint32_t, uint64_t> counts;
  for (const Key& key : *taken) {
    if (Result<void> counted = count(key, counts); !counted) {
      return std::unexpected(counted.error());
    }
  }
  return counts;
}

}  // namespace funclatency
