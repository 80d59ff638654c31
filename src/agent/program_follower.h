// Following programs into containers: every process on the host that runs a
// followed program (an absolute path as the process itself sees it, inside
// its container, or an executable's file name), running at the start or
// exec'd later (the exec watch), gets the target's functions timed. Probes
// go on files: one file (an image layer's, shared by every container of the
// image) is attached once, whatever the number of containers that run it; a
// new image version is a new file and is attached when it first runs.
// A file's first calls, those made between its exec and its attach, are the
// only ones not seen (bench/ measures that window), unless --follow-hold
// stops the process at its exec until its probes are in.
// The kernel hands the follower only the execs whose names a target may
// follow and whose files are not judged yet (probe/exec_watch.h): the
// follower keeps the exec watch's names and known files up to date. A file
// found not to be a target's program is so only in the mount namespace it
// was judged in (paths are the process's own): a container that mounts the
// file a host process runs, at the program's path, is still followed.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "collect/aggregator.h"
#include "common/error.h"
#include "model/span.h"
#include "probe/exec_watch.h"
#include "probe/function_attacher.h"
#include "probe/span_links.h"

namespace funclatency {

// Why a process that runs a followed program has no probes, by count.
enum class FollowFailure : uint32_t {
  kNoFunction = 0,  // the program has none of the target's functions
  kNoRoom,          // the maps have no function id left (--late-functions)
  kKernelRefused,   // the kernel refused the probes
  kCount,
};
std::string_view follow_failure_name(FollowFailure failure);

// A test's stand-in for a busy agent (the hidden option --test-follow-delay
// MS[:INODE], which only the tests use): each exec record of a file not
// judged yet waits `wait` before it is judged; with `inode`, only that
// file's records.
struct TestDelay {
  std::chrono::milliseconds wait{0};
  std::optional<uint64_t> inode;
  bool applies_to(const ProgramStart& start) const {
    return wait.count() > 0 && (!inode || (start.file && start.file->ino == *inode));
  }
};

// What the follower has done, for the self-metrics.
struct FollowStats {
  uint64_t processes_seen = 0;       // exec'd since the start, or running at a (re)load
  uint64_t exec_dropped = 0;         // execs the kernel's ring had no room for
  uint64_t files_attached = 0;       // files (image layers) with probes now
  uint64_t functions_attached = 0;   // functions with probes now
  uint64_t kernel_memory_bytes = 0;  // the BPF maps': the tracing object's and the exec watch's
  std::array<uint64_t, static_cast<size_t>(FollowFailure::kCount)> failures{};
};

// Whether process `pid` runs `program` (as FollowTarget::program says), and
// the path to open the program by ("/proc/PID/root/..."): nothing when it
// runs another, an error when it is gone. A process gone before it could be
// looked at (most short-lived ones: a shell's pipeline, a runtime's helpers)
// is not counted anywhere: whether it ran the program cannot be known, and
// if it did, its file is attached at its next start.
Result<std::optional<std::string>> program_in_process(int pid, const std::string& program);

// How the follower sets a span up: its settings in the BPF object at span
// index `index` (when it is first followed), and its two points planned and
// attached in the file at `path` (both points are the followed program's).
struct SpanHooks {
  std::function<Result<void>(const SpanSpec& span, uint32_t index)> configure;
  std::function<Result<SpanLinks>(const SpanSpec& span, uint32_t index, const std::string& path)>
      attach;
  // Span indexes [0, room) are the follower's; one is never used twice in a
  // run (an open span of a removed span must not end as a new one's).
  uint32_t room = 0;
};

class ProgramFollower {
 public:
  using Note = std::function<void(const std::string&)>;
  // `attacher`, `object` and `aggregator` must outlive it. `note` hears what
  // was attached and what failed (stderr); `detail` more (-v).
  ProgramFollower(std::unique_ptr<ExecWatch> watch, FunctionAttacher& attacher, BpfObject& object,
                  Aggregator& aggregator, Note note, Note detail, TestDelay test_delay = {},
                  SpanHooks span_hooks = {});
  ~ProgramFollower();

  // Follows `targets` from now on: a target as it was keeps its probes and
  // its totals; one no longer there is detached and leaves the reports; a
  // new one is attached to the processes running its program now. Returns
  // the functions attached.
  // `spans` likewise: each followed in the program its start names, kept
  // as it was when its text is the same.
  std::vector<uint32_t> follow(const std::vector<FollowTarget>& targets,
                               const std::vector<SpanSpec>& spans = {});
  // How many of `spans` would need a span index of their own (not followed
  // now), and how many indexes are left.
  size_t new_spans(const std::vector<SpanSpec>& spans) const;
  size_t span_room_left() const { return span_hooks_.room - next_span_index_; }
  // Attaches what the programs exec'd since the last poll need.
  Result<std::vector<uint32_t>> poll();

  int wait_fd() const { return watch_->wait_fd(); }
  FollowStats stats() const;
  size_t link_count() const;

 private:
  struct Followed;
  // The file process `pid` runs now (see program_follower.cpp).
  Result<std::optional<FileId>> file_now(int pid, const FileId& fallback) const;
  // Whether every target has judged the record's file already (attached it,
  // or found it not its program in the record's mount namespace).
  bool known_everywhere(const ProgramStart& start) const;
  // The exec watch told: the names the targets' programs go by, and the
  // record's file once every target has judged it.
  void publish_names();
  void publish_known(const ProgramStart& start);
  size_t learned_names() const;
  void handle(const ProgramStart& start, Followed& followed, std::vector<uint32_t>& added);
  // A target or span the new list no longer has: its probes go.
  void stop_following(Followed& gone);
  void attach_span(Followed& followed, const std::string& path, int pid, const FileId& file,
                   std::vector<uint32_t>& added);
  void attach_file(Followed& followed, const std::string& path, int pid, const FileId& file,
                   std::vector<uint32_t>& added);
  void count_failure(FollowFailure failure) { stats_.failures[static_cast<size_t>(failure)]++; }

  std::unique_ptr<ExecWatch> watch_;
  FunctionAttacher& attacher_;
  BpfObject& object_;
  Aggregator& aggregator_;
  Note note_;
  Note detail_;
  std::vector<std::unique_ptr<Followed>> followed_;
  FollowStats stats_;
  TestDelay test_delay_;  // a test's stand-in for a busy agent
  SpanHooks span_hooks_;
  uint32_t next_span_index_ = 0;
};

}  // namespace funclatency
