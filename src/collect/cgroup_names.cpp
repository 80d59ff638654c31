// Cgroup ids to paths (a walk of the v2 hierarchy, where a cgroup's id is
// its directory's inode number) and paths to container ids and pod UIDs.
#include "collect/cgroup_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <vector>

#include "common/unique_fd.h"

namespace funclatency {
namespace {

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Docker, containerd, cri-o and podman all name containers by 64 hex digits.
bool is_container_id(std::string_view text) {
  return text.size() == 64 && is_hex(text);
}

// A pod UID is a UUID (8-4-4-4-12, dashes; systemd slices write underscores),
// or 32 hex digits for static pods (a hash of their manifest).
std::optional<std::string> pod_uid_from(std::string_view text) {
  if (text.size() == 32 && is_hex(text)) return std::string(text);
  if (text.size() != 36) return std::nullopt;
  std::string uid(text);
  for (size_t i = 0; i < uid.size(); i++) {
    const bool separator = i == 8 || i == 13 || i == 18 || i == 23;
    if (separator) {
      if (uid[i] != '-' && uid[i] != '_') return std::nullopt;
      uid[i] = '-';
    } else if (!is_hex(uid.substr(i, 1))) {
      return std::nullopt;
    }
  }
  return uid;
}

std::string_view without_suffix(std::string_view text, std::string_view suffix) {
  if (text.ends_with(suffix)) text.remove_suffix(suffix.size());
  return text;
}

// A container's id and the runtime its cgroup's name says made it.
struct ContainerName {
  std::string id;
  std::optional<std::string> runtime;
};

// "docker-<id>.scope", "cri-containerd-<id>.scope", "crio-<id>.scope",
// "libpod-<id>.scope", or a bare "<id>" (cgroupfs drivers: the runtime is
// then named by the parent, "/docker/<id>", "/libpod_parent/<id>", or not at
// all, as under kubepods). Monitors ("crio-conmon-<id>.scope",
// "libpod-conmon-<id>.scope") are not containers.
std::optional<ContainerName> container_in_segment(std::string_view segment,
                                                  std::string_view parent) {
  segment = without_suffix(segment, ".scope");
  std::optional<std::string> runtime;
  for (auto [prefix, name] : {std::pair{"docker-", "docker"},
                              {"cri-containerd-", "containerd"},
                              {"crio-", "cri-o"},
                              {"libpod-", "podman"},
                              {"containerd-", "containerd"}}) {
    if (segment.starts_with(prefix)) {
      segment.remove_prefix(std::string_view(prefix).size());
      runtime = name;
      break;
    }
  }
  if (!is_container_id(segment)) return std::nullopt;
  if (!runtime && parent == "docker") runtime = "docker";
  if (!runtime && parent == "libpod_parent") runtime = "podman";
  return ContainerName{std::string(segment), std::move(runtime)};
}

// "pod<uid>" (cgroupfs driver) or "kubepods[-<qos>]-pod<uid_underscored>.slice"
// (systemd driver; kind nodes prefix it: "kubelet-kubepods-...").
std::optional<std::string> pod_uid_in_segment(std::string_view segment) {
  if (segment.starts_with("pod")) return pod_uid_from(segment.substr(3));
  if (segment.find("kubepods") == std::string_view::npos || !segment.ends_with(".slice")) {
    return std::nullopt;
  }
  segment = without_suffix(segment, ".slice");
  const size_t pod = segment.rfind("-pod");
  if (pod == std::string_view::npos) return std::nullopt;
  return pod_uid_from(segment.substr(pod + 4));
}

std::vector<std::string_view> segments_of(std::string_view path) {
  std::vector<std::string_view> segments;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

// /proc/mounts escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(std::string_view field) {
  std::string text;
  for (size_t i = 0; i < field.size(); i++) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string_view digits = field.substr(i + 1, 3);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        text +=
            static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0'));
        i += 3;
        continue;
      }
    }
    text += field[i];
  }
  return text;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    const int err = errno;
    return runtime_error("read " + path, err);
  }
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

// Calls `visit(id, path)` for every cgroup under the directory open as `fd`
// (whose path relative to the mount is `path`), depth first; takes `fd` over.
// Stops early when `visit` returns true. Cgroups removed during the walk are
// skipped.
bool walk_below(UniqueFd fd, const std::string& path,
                const std::function<bool(uint64_t, const std::string&)>& visit) {
  std::unique_ptr<DIR, int (*)(DIR*)> listing(fdopendir(fd.get()), closedir);
  if (listing == nullptr) return false;
  fd.release();  // the listing closes it
  bool done = false;
  while (!done) {
    const dirent* entry = readdir(listing.get());
    if (entry == nullptr) break;
    if (entry->d_type != DT_DIR) continue;
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string child = (path == "/" ? std::string() : path) + "/" + std::string(name);
    // kernfs reports the inode, which is the cgroup id, in d_ino.
    done = visit(entry->d_ino, child);
    if (done) break;
    UniqueFd child_fd(
        openat(dirfd(listing.get()), entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (child_fd) done = walk_below(std::move(child_fd), child, visit);
  }
  return done;
}

// Walks the whole hierarchy under `mount`, the root ("/") included.
Result<void> walk_hierarchy(const std::string& mount,
                            const std::function<bool(uint64_t, const std::string&)>& visit) {
  auto root_id = cgroup_id_of_path(mount);
  if (!root_id) return std::unexpected(root_id.error());
  if (visit(*root_id, "/")) return {};
  UniqueFd fd(open(mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    return runtime_error("list the cgroups under " + mount, err);
  }
  walk_below(std::move(fd), "/", visit);
  return {};
}

std::string missing_id_message(uint64_t cgroup_id, const std::string& mount) {
  return "no cgroup with id " + std::to_string(cgroup_id) + " under " + mount;
}

constexpr std::string_view kMissingIdHint = "the cgroup was removed before it was looked up";

}  // namespace

ContainerInfo container_of_cgroup(std::string_view cgroup_path) {
  ContainerInfo info;
  const auto segments = segments_of(cgroup_path);
  for (auto segment = segments.rbegin(); segment != segments.rend(); ++segment) {
    if (!info.container_id) {
      const std::string_view parent = segment + 1 != segments.rend() ? *(segment + 1) : "";
      if (auto container = container_in_segment(*segment, parent)) {
        info.container_id = std::move(container->id);
        info.runtime = std::move(container->runtime);
        continue;
      }
    }
    if (!info.pod_uid) info.pod_uid = pod_uid_in_segment(*segment);
  }
  return info;
}

Result<std::string> cgroup_v2_mount(std::string_view proc_mounts_text) {
  std::istringstream lines{std::string(proc_mounts_text)};
  std::string line;
  while (std::getline(lines, line)) {
    // device mount-point type options dump pass
    std::istringstream fields(line);
    std::string device, mount_point, type;
    if (!(fields >> device >> mount_point >> type)) continue;
    if (type == "cgroup2") return unescape_mount_field(mount_point);
  }
  return runtime_error("find the cgroup v2 hierarchy: /proc/mounts lists no cgroup2 file system", 0,
                       "mount it: mount -t cgroup2 none /sys/fs/cgroup/unified");
}

Result<std::string> system_cgroup_v2_mount() {
  auto text = read_text("/proc/self/mounts");
  if (!text) return std::unexpected(text.error());
  return cgroup_v2_mount(*text);
}

std::optional<std::string> cgroup_v2_path_in(std::string_view proc_pid_cgroup_text) {
  size_t start = 0;
  while (start < proc_pid_cgroup_text.size()) {
    size_t end = proc_pid_cgroup_text.find('\n', start);
    if (end == std::string_view::npos) end = proc_pid_cgroup_text.size();
    const std::string_view line = proc_pid_cgroup_text.substr(start, end - start);
    if (line.starts_with("0::")) return std::string(line.substr(3));
    start = end + 1;
  }
  return std::nullopt;
}

Result<std::string> cgroup_of_process(int pid) {
  const std::string file = "/proc/" + std::to_string(pid) + "/cgroup";
  auto text = read_text(file);
  if (!text) return std::unexpected(text.error());
  auto path = cgroup_v2_path_in(*text);
  if (!path) {
    return runtime_error("find the cgroup v2 group of PID " + std::to_string(pid) + ": " + file +
                         " has no \"0::\" line (cgroup v1 only)");
  }
  return *path;
}

Result<uint64_t> cgroup_id_of_path(const std::string& path) {
  struct statfs file_system;
  if (statfs(path.c_str(), &file_system) != 0) {
    const int err = errno;
    return bad_input("cannot use the cgroup " + path, "give a cgroup v2 directory", err);
  }
  if (file_system.f_type != CGROUP2_SUPER_MAGIC) {
    return bad_input(path + " is not in a cgroup v2 file system",
                     "give a directory under the cgroup2 mount listed in /proc/mounts");
  }
  struct stat status;
  if (stat(path.c_str(), &status) != 0) {
    const int err = errno;
    return bad_input("cannot use the cgroup " + path, "give a cgroup v2 directory", err);
  }
  if (!S_ISDIR(status.st_mode)) {
    return bad_input(path + " is not a cgroup", "give the cgroup's directory, not a file in it");
  }
  return static_cast<uint64_t>(status.st_ino);
}

Result<std::string> cgroup_path_of_id(const std::string& mount, uint64_t cgroup_id) {
  std::optional<std::string> found;
  auto walked = walk_hierarchy(mount, [&](uint64_t id, const std::string& path) {
    if (id != cgroup_id) return false;
    found = path;
    return true;
  });
  if (!walked) return std::unexpected(walked.error());
  if (!found)
    return runtime_error(missing_id_message(cgroup_id, mount), 0, std::string(kMissingIdHint));
  return *found;
}

bool cgroup_gone(const std::string& mount, const std::string& path, uint64_t cgroup_id) {
  if (path == "/") return false;
  const std::string directory = mount + path;
  struct stat status;
  if (stat(directory.c_str(), &status) != 0) return errno == ENOENT || errno == ENOTDIR;
  if (static_cast<uint64_t>(status.st_ino) != cgroup_id) return true;
  auto events = read_text(directory + "/cgroup.events");
  if (!events) return false;
  return events->find("populated 0") != std::string::npos;
}

CgroupNames::CgroupNames(std::string mount) : mount_(std::move(mount)) {}

Result<std::string> CgroupNames::path_of(uint64_t cgroup_id) {
  if (auto known = paths_.find(cgroup_id); known != paths_.end()) return known->second.path;
  if (!missing_.contains(cgroup_id)) {
    walks_++;
    auto walked = walk_hierarchy(mount_, [&](uint64_t id, const std::string& path) {
      paths_.insert_or_assign(id, Known{path, walks_});
      return false;
    });
    if (!walked) return std::unexpected(walked.error());
    std::erase_if(paths_, [this](const auto& entry) { return entry.second.walk + 1 < walks_; });
    if (auto known = paths_.find(cgroup_id); known != paths_.end()) return known->second.path;
    missing_.insert(cgroup_id);
  }
  return runtime_error(missing_id_message(cgroup_id, mount_), 0, std::string(kMissingIdHint));
}

}  // namespace funclatency
