// Capabilities are a thread's own on Linux: a thread started by one that
// keeps some permitted (for a late attach, for naming a slow call's stack)
// inherits them. A thread that reads bytes from the network (the /metrics
// server, the OTLP sender and its answers) leaves itself none, so nothing it
// parses runs where a capability could be raised.
//
// Also the one reading of the calling thread's sets (capget), for the
// privilege drop (cli/privilege_drop.h) and for naming what a refused probe
// lacked (probe/tracing_capabilities.h).
#pragma once

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "common/error.h"

namespace funclatency {

// A set of capabilities, bit n = capability n (linux/capability.h).
using CapabilityMask = uint64_t;

constexpr CapabilityMask capability_bit(int capability) {
  return CapabilityMask{1} << capability;
}

// The calling thread's effective, permitted capability sets.
struct ThreadCapabilities {
  CapabilityMask effective = 0, permitted = 0;
};

inline Result<ThreadCapabilities> current_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return runtime_error("read capabilities", errno);
  ThreadCapabilities caps;
  caps.effective = data[0].effective | (CapabilityMask{data[1].effective} << 32);
  caps.permitted = data[0].permitted | (CapabilityMask{data[1].permitted} << 32);
  return caps;
}

// Empties the calling thread's effective, permitted and inheritable sets.
// 0, or the errno.
inline int drop_thread_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  return syscall(SYS_capset, &header, none) == 0 ? 0 : errno;
}

}  // namespace funclatency
