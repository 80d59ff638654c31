// Capabilities are per thread in Linux, and capset() changes only the
// calling thread's; exporter threads (the HTTP server, the OTLP sender,
// gRPC's own) exist before the probes are attached. So every other thread is
// asked, by a real-time signal, to drop its own, and /proc/self/task is
// checked until none is left with any. Raw syscalls: the handler must be
// async-signal-safe. setresuid()/setgroups() reach every thread through glibc.
#include "cli/privileges.h"

#include <dirent.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <fstream>
#include <string>
#include <vector>

#include "probe/tracing_capabilities.h"

namespace funclatency {

namespace {

int capset_thread(CapabilityMask effective, CapabilityMask permitted) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {
      {static_cast<uint32_t>(effective), static_cast<uint32_t>(permitted), 0},
      {static_cast<uint32_t>(effective >> 32), static_cast<uint32_t>(permitted >> 32), 0}};
  return static_cast<int>(syscall(SYS_capset, &header, data));
}

// Another thread's acknowledgement of the drop request.
std::atomic<int> dropped_threads = 0;

// Nothing executed later may gain what the thread gave up (not even as uid
// 0: no_new_privs limits an exec to the permitted set), and the bounding set
// keeps only `keep` (possible while the thread still has CAP_SETPCAP).
void forbid_regaining(CapabilityMask keep) {
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  for (int capability = 0; capability <= CAP_LAST_CAP; capability++) {
    if (!(keep & capability_bit(capability))) prctl(PR_CAPBSET_DROP, capability, 0, 0, 0);
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

void drop_own_capabilities(int) {
  int saved = errno;
  forbid_regaining(0);
  capset_thread(0, 0);
  dropped_threads.fetch_add(1);
  // The word is the atomic's own int; FUTEX_WAKE is async-signal-safe.
  syscall(SYS_futex, &dropped_threads, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  errno = saved;
}

// Until `expected` threads have acknowledged or `give_up` has passed: woken
// by each acknowledgement (a sleep between checks cost every start ~1 ms).
void wait_for_acknowledgements(int expected, std::chrono::steady_clock::time_point give_up) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
  for (int seen = dropped_threads.load(); seen < expected; seen = dropped_threads.load()) {
    auto left = give_up - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                     static_cast<long>(ns % 1'000'000'000)};
    syscall(SYS_futex, &dropped_threads, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
  }
}

// The thread's CapEff and CapPrm from /proc/self/task/TID/status; nullopt
// when the thread is gone.
std::optional<ThreadCapabilities> capabilities_of(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  if (!status) return std::nullopt;
  ThreadCapabilities caps;
  bool found = false;
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("CapEff:")) caps.effective = std::stoull(line.substr(7), nullptr, 16);
    if (line.starts_with("CapPrm:")) {
      caps.permitted = std::stoull(line.substr(7), nullptr, 16);
      found = true;
    }
  }
  if (!found) return std::nullopt;
  return caps;
}

std::vector<pid_t> other_threads() {
  std::vector<pid_t> tids;
  pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(tasks)) {
      if (entry->d_name[0] == '.') continue;
      pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid != self) tids.push_back(tid);
    }
    closedir(tasks);
  }
  return tids;
}

// Until no other thread holds a capability (a thread may start one while
// we ask: it inherits its creator's, so we go round again).
Result<void> drop_in_other_threads() {
  const int signo = SIGRTMIN + 4;
  struct sigaction action {};
  action.sa_handler = drop_own_capabilities;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  if (sigaction(signo, &action, &previous) != 0) {
    return runtime_error("install the capability-dropping signal handler", errno);
  }
  std::vector<pid_t> holding;
  for (int round = 0; round < 20; round++) {
    holding.clear();
    for (pid_t tid : other_threads()) {
      auto caps = capabilities_of(tid);
      if (caps && (caps->effective | caps->permitted) != 0) holding.push_back(tid);
    }
    if (holding.empty()) break;
    int expected = dropped_threads.load() + static_cast<int>(holding.size());
    for (pid_t tid : holding) syscall(SYS_tgkill, getpid(), tid, signo);
    wait_for_acknowledgements(expected,
                              std::chrono::steady_clock::now() + std::chrono::milliseconds(500));
  }
  sigaction(signo, &previous, nullptr);
  if (!holding.empty()) {
    return runtime_error("drop capabilities in thread " + std::to_string(holding.front()) +
                             " (and " + std::to_string(holding.size() - 1) + " more)",
                         0, "a library thread blocks real-time signals");
  }
  return {};
}

Result<void> switch_user(const TargetUser& user, bool keep_capabilities) {
  if (setgroups(user.groups.size(), user.groups.data()) != 0) {
    return runtime_error("--user " + user.name + ": set the supplementary groups", errno);
  }
  if (setresgid(user.gid, user.gid, user.gid) != 0) {
    return runtime_error("--user " + user.name + ": switch to group " + std::to_string(user.gid),
                         errno);
  }
  // Without KEEPCAPS, leaving uid 0 clears the thread's permitted set.
  if (keep_capabilities) prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
  int switched = setresuid(user.uid, user.uid, user.uid);
  int reason = errno;
  prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
  if (switched != 0) {
    return runtime_error("--user " + user.name + ": switch to uid " + std::to_string(user.uid),
                         reason);
  }
  return {};
}

}  // namespace

Result<std::optional<TargetUser>> lookup_user(const PrivilegeCliValues& values) {
  if (values.user.empty()) return std::optional<TargetUser>();
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  int error = getpwnam_r(values.user.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (!found) {
    // A number names a uid, as with setpriv --reuid.
    char* end = nullptr;
    unsigned long uid = std::strtoul(values.user.c_str(), &end, 10);
    if (end && *end == '\0' && !values.user.empty()) {
      error = getpwuid_r(static_cast<uid_t>(uid), &entry, buffer.data(), buffer.size(), &found);
    }
  }
  if (!found) {
    return bad_input("--user " + values.user + ": no such user", "give a name from /etc/passwd",
                     error);
  }
  TargetUser user{found->pw_name, found->pw_uid, found->pw_gid, {}};
  int count = 64;
  user.groups.resize(static_cast<size_t>(count));
  if (getgrouplist(found->pw_name, found->pw_gid, user.groups.data(), &count) < 0) {
    user.groups.resize(static_cast<size_t>(count));
    getgrouplist(found->pw_name, found->pw_gid, user.groups.data(), &count);
  }
  user.groups.resize(static_cast<size_t>(std::max(count, 0)));
  auto caps = current_capabilities();
  if (!caps) return std::unexpected(caps.error());
  bool same = getuid() == user.uid && getgid() == user.gid;
  if (!same && (caps->effective & (capability_bit(CAP_SETUID) | capability_bit(CAP_SETGID))) !=
                   (capability_bit(CAP_SETUID) | capability_bit(CAP_SETGID))) {
    return bad_input("--user " + values.user + ": switching user needs CAP_SETUID and CAP_SETGID",
                     "run as root, or leave --user out");
  }
  return std::optional<TargetUser>(std::move(user));
}

Result<void> check_agent_capabilities() {
  auto caps = current_capabilities();
  if (!caps) return {};  // not known: the load or the attach says what fails
  auto holds = [&](int capability) { return (caps->effective & capability_bit(capability)) != 0; };
  std::vector<int> missing;
  if (!holds(CAP_SYS_ADMIN)) {
    for (int capability : {CAP_BPF, CAP_PERFMON}) {
      if (!holds(capability)) missing.push_back(capability);
    }
  }
  if (!holds(CAP_SYS_PTRACE)) missing.push_back(CAP_SYS_PTRACE);
  if (!holds(CAP_DAC_READ_SEARCH) && !holds(CAP_DAC_OVERRIDE)) {
    missing.push_back(CAP_DAC_READ_SEARCH);
  }
  if (missing.empty()) return {};
  std::string described;
  for (int capability : missing) {
    described += fmt::format("{}{}, to {}", described.empty() ? "" : "; ",
                             capability_name(capability), capability_purpose(capability));
  }
  return bad_input("the agent (--follow, --config) is missing " + described,
                   fmt::format("run it as root, or grant {}: in a pod, "
                               "securityContext.capabilities.add",
                               missing.size() == 1 ? "it" : "them"));
}

CapabilityMask late_attach_capabilities(bool perf_event_fallback) {
  // Measured on 6.18: a uprobe_multi link of an already loaded program
  // needs no CAP_BPF or CAP_PERFMON; reading the process's maps and library
  // files does.
  CapabilityMask needed = capability_bit(CAP_SYS_PTRACE) | capability_bit(CAP_DAC_READ_SEARCH);
  if (perf_event_fallback)
    needed |= capability_bit(CAP_BPF) | capability_bit(CAP_PERFMON) | capability_bit(CAP_SYS_ADMIN);
  return needed;
}

CapabilityMask stack_unwinding_capabilities() {
  return capability_bit(CAP_SYS_PTRACE) | capability_bit(CAP_DAC_READ_SEARCH);
}

CapabilityMask process_memory_capabilities() {
  return capability_bit(CAP_SYS_PTRACE);
}

Result<uint64_t> raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return runtime_error("read the open-file limit (RLIMIT_NOFILE)", errno);
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised{limit.rlim_max, limit.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      return runtime_error("raise the soft open-file limit to the hard one", errno,
                           "raise it before starting funclatency (ulimit -n)");
    }
    limit = raised;
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

Result<void> drop_privileges(const std::optional<TargetUser>& user, CapabilityMask keep) {
  auto before = current_capabilities();
  if (!before) return std::unexpected(before.error());
  keep &= before->permitted;
  forbid_regaining(keep);
  if (user && (getuid() != user->uid || getgid() != user->gid)) {
    if (auto switched = switch_user(*user, keep != 0); !switched) return switched;
  }
  if (auto others = drop_in_other_threads(); !others) return others;
  if (capset_thread(0, keep) != 0) return runtime_error("drop capabilities", errno);
  return {};
}

RaisedCapabilities::RaisedCapabilities() {
  auto caps = current_capabilities();
  if (!caps || caps->effective == caps->permitted) return;
  if (capset_thread(caps->permitted, caps->permitted) == 0) restore_ = *caps;
}

RaisedCapabilities::~RaisedCapabilities() {
  if (restore_) capset_thread(restore_->effective, restore_->permitted);
}

}  // namespace funclatency
