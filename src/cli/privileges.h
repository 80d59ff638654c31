// Least privilege after attach: funclatency needs its capabilities to load
// BPF and attach probes, and nothing after that but the file descriptors it
// already holds (maps, ring buffer, links, the listening socket). Once every
// probe is attached, drop_privileges() takes every capability from every
// thread (exporter threads included) and, with `--user NAME`, switches to
// that user. With --wait-for-library the main thread keeps, permitted but not
// effective, what a late attach needs, and raises it only while attaching
// (RaisedCapabilities).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/thread_capabilities.h"

namespace funclatency {

struct PrivilegeCliValues {
  std::string user;  // --user NAME; empty: stay who we are
};

struct TargetUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups
};

// The --user's ids, looked up before anything attaches: an unknown user, or
// no CAP_SETUID/CAP_SETGID to switch to it, is kBadInput. nullopt without --user.
Result<std::optional<TargetUser>> lookup_user(const PrivilegeCliValues& values);

// The node agent (--follow, --config) finds the processes that execute a
// program through /proc/PID (their exe, maps and root: other users' and
// containers') and reads the files they run: without CAP_SYS_PTRACE it sees
// none and traces nothing, silently. Before anything is loaded, one
// kBadInput naming every capability it lacks (those tracing needs too) and
// what each is for; success when the effective set holds them (CAP_SYS_ADMIN
// stands in for CAP_BPF and CAP_PERFMON, CAP_DAC_OVERRIDE for
// CAP_DAC_READ_SEARCH, as the kernel lets them).
Result<void> check_agent_capabilities();

// What attaching the probes of a library loaded later needs: CAP_SYS_PTRACE
// (another user's /proc/PID/maps and /proc/PID/root) and CAP_DAC_READ_SEARCH
// (libraries not world-readable). A uprobe_multi link of the loaded program
// needs nothing more; the perf-event fallback opens perf events, which takes
// CAP_PERFMON, CAP_BPF and CAP_SYS_ADMIN.
CapabilityMask late_attach_capabilities(bool perf_event_fallback);

// What naming a slow call's stack needs (--slowest, --slower-than): reading
// the process's /proc/PID/maps (CAP_SYS_PTRACE: a process with capabilities
// of its own, another user's) and its binaries (CAP_DAC_READ_SEARCH).
CapabilityMask stack_unwinding_capabilities();

// What reading another process's memory needs (process_vm_readv of a
// process with capabilities of its own, another user's): CAP_SYS_PTRACE.
CapabilityMask process_memory_capabilities();

// Switches to `user` (when given), then leaves every thread of the process
// with no capability at all, except the calling thread's permitted set,
// which keeps `keep` (intersected with what it has). Call it on the thread
// that will attach later. Runs after attach, so a failure is kRuntime.
Result<void> drop_privileges(const std::optional<TargetUser>& user, CapabilityMask keep);

// Raises the soft open-file limit to the hard one, for the process: the BPF
// object, its links and the /metrics server's connections all hold
// descriptors, and a soft limit a service manager set low would run the
// server out of them. Returns the soft limit now in force.
Result<uint64_t> raise_open_file_limit();

// While alive, the calling thread's permitted capabilities are effective too;
// restores the effective set when destroyed. Does nothing when the permitted
// set is already effective (as for a run that dropped nothing).
class RaisedCapabilities {
 public:
  RaisedCapabilities();
  ~RaisedCapabilities();
  RaisedCapabilities(const RaisedCapabilities&) = delete;
  RaisedCapabilities& operator=(const RaisedCapabilities&) = delete;

 private:
  std::optional<ThreadCapabilities> restore_;
};

}  // namespace funclatency
