// What a refused load or attach lacked, from the calling thread's effective
// set (common/thread_capabilities.h reads it), named the way a hint says it.
#include "probe/tracing_capabilities.h"

#include <string>

#include "common/thread_capabilities.h"

namespace funclatency {

std::string missing_tracing_capabilities() {
  auto current = current_capabilities();
  const CapabilityMask caps = current ? current->effective : 0;
  auto has = [&](int capability) { return (caps & capability_bit(capability)) != 0; };
  if (has(CAP_SYS_ADMIN)) return {};
  bool bpf = has(CAP_BPF), perfmon = has(CAP_PERFMON);
  if (!bpf && !perfmon) return "CAP_BPF and CAP_PERFMON";
  if (!bpf) return "CAP_BPF";
  if (!perfmon) return "CAP_PERFMON";
  return {};
}

std::string privilege_hint() {
  std::string missing = missing_tracing_capabilities();
  if (missing.empty()) return "run as root";
  return "missing " + missing + ": run as root, or grant it";
}

}  // namespace funclatency
