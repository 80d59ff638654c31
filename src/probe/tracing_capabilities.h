// Which of the capabilities tracing needs this process lacks, so a refusal
// can name them instead of only "Operation not permitted".
#pragma once

#include <string>

namespace funclatency {

// "CAP_BPF and CAP_PERFMON" / "CAP_PERFMON", or empty when none is missing
// (CAP_SYS_ADMIN stands in for both, as the kernel lets it).
std::string missing_tracing_capabilities();

// The hint for a permission error: what to grant, or "run as root".
std::string privilege_hint();

}  // namespace funclatency
