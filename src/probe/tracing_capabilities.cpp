// What a refused load or attach lacked, from the calling thread's effective
// set (common/thread_capabilities.h reads it), named the way a hint says it.
#include "probe/tracing_capabilities.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "common/thread_capabilities.h"

namespace funclatency {

namespace {

CapabilityMask effective_capabilities() {
  auto current = current_capabilities();
  return current ? current->effective : 0;
}

bool holds(CapabilityMask caps, int capability) {
  return (caps & capability_bit(capability)) != 0;
}

std::vector<int> missing_for_tracing(CapabilityMask caps) {
  if (holds(caps, CAP_SYS_ADMIN)) return {};
  std::vector<int> missing;
  if (!holds(caps, CAP_BPF)) missing.push_back(CAP_BPF);
  if (!holds(caps, CAP_PERFMON)) missing.push_back(CAP_PERFMON);
  return missing;
}

struct KnownCapability {
  int capability;
  std::string_view name;
  std::string_view purpose;
};

constexpr KnownCapability kKnown[] = {
    {CAP_BPF, "CAP_BPF", "load the BPF programs and create their maps"},
    {CAP_PERFMON, "CAP_PERFMON", "attach tracing programs and uprobes"},
    {CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "create uprobes on kernels that require it"},
    {CAP_SYS_PTRACE, "CAP_SYS_PTRACE",
     "read /proc/PID/exe, maps and root of other users' and containers' processes"},
    {CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH",
     "read binaries and libraries that are not world-readable"},
};

const KnownCapability* known(int capability) {
  for (const auto& entry : kKnown) {
    if (entry.capability == capability) return &entry;
  }
  return nullptr;
}

}  // namespace

std::string_view capability_name(int capability) {
  const KnownCapability* entry = known(capability);
  return entry ? entry->name : "a capability";
}

std::string_view capability_purpose(int capability) {
  const KnownCapability* entry = known(capability);
  return entry ? entry->purpose : std::string_view();
}

std::string missing_tracing_capabilities() {
  std::string names;
  for (int capability : missing_for_tracing(effective_capabilities())) {
    names += (names.empty() ? "" : " and ") + std::string(capability_name(capability));
  }
  return names;
}

std::string privilege_hint(std::string_view syscall) {
  const CapabilityMask caps = effective_capabilities();
  const std::vector<int> missing = missing_for_tracing(caps);
  if (!missing.empty()) {
    std::string described;
    for (int capability : missing) {
      described += fmt::format("{}{}, to {}", described.empty() ? "" : ", and ",
                               capability_name(capability), capability_purpose(capability));
    }
    return fmt::format("missing {}: run as root, or grant {}", described,
                       missing.size() == 1 ? "it" : "them");
  }
  if (!holds(caps, CAP_SYS_ADMIN)) {
    return fmt::format(
        "CAP_BPF and CAP_PERFMON are held: this kernel may also want CAP_SYS_ADMIN, to {}; or a "
        "seccomp profile or an LSM such as AppArmor or SELinux refuses {}",
        capability_purpose(CAP_SYS_ADMIN), syscall);
  }
  return fmt::format(
      "the capabilities are held: a seccomp profile or an LSM such as AppArmor or SELinux likely "
      "refuses {}; allow it in the container's security profile",
      syscall);
}

}  // namespace funclatency
