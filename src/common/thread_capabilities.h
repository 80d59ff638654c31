// Capabilities are a thread's own on Linux: a thread started by one that
// keeps some permitted (for a late attach, for naming a slow call's stack)
// inherits them. A thread that reads bytes from the network (the /metrics
// server, the OTLP sender and its answers) leaves itself none, so nothing it
// parses runs where a capability could be raised.
#pragma once

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace funclatency {

// Empties the calling thread's effective, permitted and inheritable sets.
// 0, or the errno.
inline int drop_thread_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  return syscall(SYS_capset, &header, none) == 0 ? 0 : errno;
}

}  // namespace funclatency
