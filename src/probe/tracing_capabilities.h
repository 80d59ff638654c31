// Which of the capabilities tracing needs this process lacks, so a refusal
// can name them, and what each is for, instead of only "Operation not
// permitted"; and, when none is missing, what else refuses (a seccomp
// profile or an LSM, as a container's can).
#pragma once

#include <string>
#include <string_view>

namespace funclatency {

// "CAP_BPF and CAP_PERFMON" / "CAP_PERFMON", or empty when none is missing
// (CAP_SYS_ADMIN stands in for both, as the kernel lets it).
std::string missing_tracing_capabilities();

// "CAP_BPF" for CAP_BPF; the capabilities funclatency uses only.
std::string_view capability_name(int capability);

// What funclatency needs a capability for, as a message says it
// ("load the BPF programs and create their maps" for CAP_BPF); empty for
// one it does not use.
std::string_view capability_purpose(int capability);

// The hint for EPERM or EACCES from `syscall` ("bpf()", "perf_event_open()"):
// the capabilities missing and what for, or, when the process holds them,
// that a seccomp profile or an LSM refuses the call.
std::string privilege_hint(std::string_view syscall = "bpf()");

}  // namespace funclatency
