#include "cli/series.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/vfs.h>

#include <memory>

#include "collect/cgroup_names.h"

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

namespace {
constexpr long kCgroup2SuperMagic = 0x63677270;  // CGROUP2_SUPER_MAGIC

std::string v2_mount_hint() {
  auto mount = system_cgroup_v2_mount();
  if (!mount) return "cgroup v2 is not mounted here";
  return "give a directory under the cgroup v2 mount, " + *mount;
}
}  // namespace

Result<UniqueFd> open_cgroup_v2(const std::string& given) {
  // A relative path is one below the cgroup v2 mount ("kubepods.slice/...").
  std::string path = given;
  if (!path.starts_with('/')) {
    if (auto mount = system_cgroup_v2_mount()) path = *mount + "/" + path;
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    return std::unexpected(
        Error{ErrorKind::kBadInput, "open cgroup " + path + " (-c)", errno, v2_mount_hint()});
  }
  struct statfs fs {};
  if (fstatfs(fd.get(), &fs) < 0) {
    return std::unexpected(Error{ErrorKind::kBadInput, "stat cgroup " + path + " (-c)", errno, {}});
  }
  if (fs.f_type != kCgroup2SuperMagic) {
    return bad_input("-c " + path + " is not a cgroup v2 directory", v2_mount_hint());
  }
  return fd;
}

Result<void> check_cgroup_tree(const Config& config) {
  if (!(config.series_by & FL_BY_CGROUP)) return {};
  auto mount = system_cgroup_v2_mount();
  if (mount) return {};
  return bad_input(
      "series by cgroup (--by cgroup; --follow's and the agent's default) need the cgroup v2 "
      "tree, and /proc/mounts lists no cgroup2 file system",
      "mount it: mount -t cgroup2 none DIR; in a pod, mount the node's /sys/fs/cgroup; or "
      "choose another --by");
}

SeriesOptions series_options(const Config& config) {
  SeriesOptions options;
  options.by = config.series_by;
  options.max_series = config.max_series;
  std::shared_ptr<CgroupNames> names;
  if (config.series_by & FL_BY_CGROUP) {
    auto mount = system_cgroup_v2_mount();
    names = std::make_shared<CgroupNames>(mount ? *mount : std::string("/sys/fs/cgroup"));
  }
  const ValueSeries value = config.value_series;
  options.label = [names, value](const SeriesKey& key) {
    SeriesLabels labels;
    if (value.source == FL_VALUE_RETVAL) labels.retval = value_label(value, key.value);
    if (value.source == FL_VALUE_ARG) {
      labels.arg = value_label(value, key.value);
      labels.arg_index = static_cast<int>(value.index);
    }
    if (names) {
      auto path = names->path_of(key.cgroup_id);
      labels.cgroup = path ? *path : "cgroup id " + std::to_string(key.cgroup_id);
      if (path) {
        ContainerInfo container = container_of_cgroup(*path);
        labels.container_id = container.container_id;
        labels.pod_uid = container.pod_uid;
        labels.runtime = container.runtime;
      }
    }
    return labels;
  };
  // EPERM: it runs, as someone else (after privileges were dropped).
  options.alive = [](uint32_t tgid) {
    return ::kill(static_cast<pid_t>(tgid), 0) == 0 || errno == EPERM;
  };
  return options;
}

}  // namespace funclatency
