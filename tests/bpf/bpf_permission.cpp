#include "bpf_permission.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "probe/tracing_capabilities.h"

namespace funclatency::testing {

std::string bpf_unavailable_reason() {
  if (std::string missing = missing_tracing_capabilities(); !missing.empty()) {
    return "needs root or " + missing;
  }
  if (!std::filesystem::exists("/sys/bus/event_source/devices/uprobe")) {
    return "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)";
  }
  // Capabilities are not the whole story (lockdown, seccomp, a container).
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  const long fd = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  if (fd < 0) return std::string("bpf(BPF_MAP_CREATE) failed: ") + std::strerror(errno);
  close(static_cast<int>(fd));
  return {};
}

bool bpf_required() {
  const char* value = std::getenv("FUNCLATENCY_REQUIRE_BPF");
  return value != nullptr && std::string(value) == "1";
}

}  // namespace funclatency::testing
