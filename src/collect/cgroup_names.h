// Naming cgroups for people: BPF sees a task's cgroup v2 id (the inode number
// of its directory), series and labels want the cgroup's path and, where the
// path follows a container runtime's naming, the container id and pod UID.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"

namespace funclatency {

// What a cgroup path says about the container a task runs in.
struct ContainerInfo {
  std::optional<std::string> container_id;  // 64 lowercase hex digits
  std::optional<std::string> pod_uid;  // "8f8f6c4a-...-...", dashes as the API server writes it
  // What made the container, where the cgroup's name says: "docker",
  // "containerd", "cri-o" or "podman".
  std::optional<std::string> runtime;
};

// Reads the naming of docker (/docker/<id>, docker-<id>.scope), containerd
// and CRI under kubelet with the cgroupfs driver (/kubepods/<qos>/pod<uid>/<id>)
// or the systemd driver (kubepods-<qos>-pod<uid_with_underscores>.slice/
// cri-containerd-<id>.scope), cri-o (crio-<id>.scope) and podman
// (libpod-<id>.scope). `cgroup_path` is relative to the cgroup v2 root
// ("/system.slice/..."). The innermost container wins (docker in docker); a
// path of no container gives neither field, a pod's own cgroup only the UID.
ContainerInfo container_of_cgroup(std::string_view cgroup_path);

// The mount point of the cgroup v2 hierarchy in /proc/mounts text (the first
// "cgroup2" entry; octal escapes such as "\040" undone). Not always
// /sys/fs/cgroup: a hybrid layout mounts it at /sys/fs/cgroup/unified.
Result<std::string> cgroup_v2_mount(std::string_view proc_mounts_text);
// The same, for this machine (/proc/self/mounts).
Result<std::string> system_cgroup_v2_mount();

// The cgroup v2 path in /proc/PID/cgroup text (its "0::PATH" line), or nothing
// when the process is in no v2 cgroup (a v1-only system).
std::optional<std::string> cgroup_v2_path_in(std::string_view proc_pid_cgroup_text);
// The cgroup v2 path of process `pid` ("/kubepods/..."), from /proc/PID/cgroup.
Result<std::string> cgroup_of_process(int pid);

// The id BPF reports (bpf_get_current_cgroup_id) for the cgroup v2 directory
// `path` (absolute, under the mount): its inode number. A path that is not a
// directory of a cgroup v2 file system is kBadInput.
Result<uint64_t> cgroup_id_of_path(const std::string& path);

// The path, relative to `mount` ("/" for the root), of the cgroup whose id is
// `cgroup_id`, found by walking the hierarchy. One walk per call: resolving
// many ids, use CgroupNames.
Result<std::string> cgroup_path_of_id(const std::string& mount, uint64_t cgroup_id);

// Whether the cgroup `cgroup_id`, found at `path` (relative to `mount`), is
// gone: its directory removed (or now another cgroup's), or no process in it
// or below it (cgroup.events says "populated 0"). The root is never gone; a
// cgroup that cannot be read is taken as still there.
bool cgroup_gone(const std::string& mount, const std::string& path, uint64_t cgroup_id);

// Resolves cgroup ids to paths, remembering the cgroups seen: one walk of the
// hierarchy fills the cache and a miss walks it again. Paths stay known after
// the cgroup is removed (its last interval still gets a name) until a second
// walk has not found it, so the cache holds what the last two walks saw, not
// every container a node ever ran; an id that a fresh walk did not find is
// not looked for again (ids are never reused).
class CgroupNames {
 public:
  explicit CgroupNames(std::string mount);

  Result<std::string> path_of(uint64_t cgroup_id);
  // A cgroup that is gone and no series names any more: its path need not
  // be kept (a node's containers come and go).
  void forget(uint64_t cgroup_id) {
    paths_.erase(cgroup_id);
    missing_.erase(cgroup_id);
  }
  const std::string& mount() const { return mount_; }
  // How many walks of the hierarchy were made (for tests and -v).
  size_t walks() const { return walks_; }

 private:
  std::string mount_;
  struct Known {
    std::string path;
    size_t walk = 0;  // the last walk that found it
  };
  std::unordered_map<uint64_t, Known> paths_;
  std::unordered_set<uint64_t> missing_;
  size_t walks_ = 0;
};

}  // namespace funclatency
