#include "probe/uprobe_multi.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace funclatency {

namespace {

// The link_create part of union bpf_attr as kernels 6.6+ lay it out; the
// uapi header on Debian 12 is older.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16);
static_assert(offsetof(LinkCreateUprobeMulti, cnt) == 48);
static_assert(offsetof(LinkCreateUprobeMulti, pid) == 56);

constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

}  // namespace

Result<int> create_uprobe_multi_link(int program_fd, const std::string& path,
                                     std::span<const uint64_t> offsets,
                                     std::span<const uint64_t> cookies, bool return_probe,
                                     int pid) {
  union bpf_attr attr;
  static_assert(sizeof(attr) >= sizeof(LinkCreateUprobeMulti));
  std::memset(&attr, 0, sizeof(attr));
  LinkCreateUprobeMulti request{};
  request.prog_fd = static_cast<uint32_t>(program_fd);
  request.attach_type = kAttachTypeUprobeMulti;
  request.path = reinterpret_cast<uintptr_t>(path.c_str());
  request.offsets = reinterpret_cast<uintptr_t>(offsets.data());
  request.cookies = reinterpret_cast<uintptr_t>(cookies.data());
  request.cnt = static_cast<uint32_t>(offsets.size());
  request.multi_flags = return_probe ? kUprobeMultiReturn : 0;
  request.pid = pid > 0 ? static_cast<uint32_t>(pid) : 0;
  std::memcpy(&attr, &request, sizeof(request));
  long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
  if (fd < 0) return runtime_error("create a uprobe_multi link on " + path, errno);
  return static_cast<int>(fd);
}

}  // namespace funclatency
