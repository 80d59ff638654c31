// Why: the first uprobe a run registers waits for an RCU grace period
// (uprobe registration takes the percpu rwsem dup_mmap_sem for writing; its
// rcu_sync makes the first writer wait: 10-15 ms on this machine, more than
// funclatency's whole start-up CPU). Registrations that follow within a grace
// period do not wait. libbpf-tools pays the wait after loading its programs;
// funclatency starts it first, so it runs while the BPF object is verified
// and loaded.
//
// UprobeWarmup, made once the targets are planned (a typo still fails at
// once), starts a thread that links an empty program, on a uprobe_multi
// link filtered to this process, at a function of funclatency's own binary
// that nothing calls: the traced program's code is never touched. The real
// links then find the lock's grace period passed, or wait only for the rest
// of it. A failure (no uprobe_multi, no privileges) only loses the head
// start.
//
// The thread closes its link (closing waits for a grace period too) only
// once released: after privileges are dropped, since the drop asks every
// thread to give up its capabilities and a thread waiting in close() would
// hold it up. The destructor releases too, so an early error return never
// leaves the link to anything but the process's exit.
#pragma once

#include <atomic>
#include <memory>

#include "common/non_copyable.h"

namespace funclatency {

class UprobeWarmup : NonCopyable {
 public:
  // Starts the thread (no thread: no head start, nothing to wait for).
  UprobeWarmup();
  ~UprobeWarmup();

  // Blocks until the warm-up link is made or has failed: at once after a
  // real link was made, which waited for the same grace period. Call it
  // before dropping privileges.
  void wait_registered() const;
  // Lets the thread close its link and end. Call it after dropping
  // privileges; idempotent.
  void release();

  enum class State : int { kStarting, kRegistered, kReleased };

 private:
  std::shared_ptr<std::atomic<State>> state_;  // shared with the detached thread
};

}  // namespace funclatency
