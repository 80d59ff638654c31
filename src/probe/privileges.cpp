#include "probe/privileges.h"

#include <cstdint>
#include <fstream>
#include <string>

namespace funclatency {

namespace {

// Capability numbers (linux/capability.h).
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

// The effective set from /proc/self/status ("CapEff:\t000001ffffffffff").
uint64_t effective_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

bool has(uint64_t set, int capability) {
  return (set >> capability) & 1;
}

}  // namespace

std::string missing_tracing_capabilities() {
  uint64_t caps = effective_capabilities();
  if (has(caps, kCapSysAdmin)) return {};
  bool bpf = has(caps, kCapBpf), perfmon = has(caps, kCapPerfmon);
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
