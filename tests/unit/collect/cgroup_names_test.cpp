// Container ids and pod UIDs read from cgroup paths as the common runtimes
// write them, the cgroup2 mount found in /proc/mounts text, and cgroup ids
// resolved to paths on this machine's real cgroup v2 hierarchy.
#include "collect/cgroup_names.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace funclatency {
namespace {

const std::string kId = "3f1c2d9a8b7e6f5041322314051627384950a1b2c3d4e5f60718293a4b5c6d7e";
const std::string kOuterId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kUid = "8c1f9e2a-5b3d-4e6f-9a7b-1c2d3e4f5a6b";
const std::string kUidUnderscored = "8c1f9e2a_5b3d_4e6f_9a7b_1c2d3e4f5a6b";

struct Sample {
  std::string what;
  std::string path;
  std::optional<std::string> container_id;
  std::optional<std::string> pod_uid;
};

std::vector<Sample> samples() {
  const std::string systemd_pods = "/kubepods.slice/kubepods-";
  return {
      {"docker, cgroupfs driver", "/docker/" + kId, kId, std::nullopt},
      {"docker, systemd driver", "/system.slice/docker-" + kId + ".scope", kId, std::nullopt},
      {"docker in docker: the inner one", "/docker/" + kOuterId + "/docker/" + kId, kId,
       std::nullopt},
      {"containerd/CRI, cgroupfs, burstable", "/kubepods/burstable/pod" + kUid + "/" + kId, kId,
       kUid},
      {"containerd/CRI, cgroupfs, besteffort", "/kubepods/besteffort/pod" + kUid + "/" + kId, kId,
       kUid},
      {"containerd/CRI, cgroupfs, guaranteed", "/kubepods/pod" + kUid + "/" + kId, kId, kUid},
      {"containerd/CRI, systemd, burstable",
       systemd_pods + "burstable.slice/kubepods-burstable-pod" + kUidUnderscored +
           ".slice/cri-containerd-" + kId + ".scope",
       kId, kUid},
      {"containerd/CRI, systemd, besteffort",
       systemd_pods + "besteffort.slice/kubepods-besteffort-pod" + kUidUnderscored +
           ".slice/cri-containerd-" + kId + ".scope",
       kId, kUid},
      {"containerd/CRI, systemd, guaranteed",
       "/kubepods.slice/kubepods-pod" + kUidUnderscored + ".slice/cri-containerd-" + kId + ".scope",
       kId, kUid},
      {"cri-o, systemd, burstable",
       systemd_pods + "burstable.slice/kubepods-burstable-pod" + kUidUnderscored + ".slice/crio-" +
           kId + ".scope",
       kId, kUid},
      {"cri-o's monitor is not the container",
       systemd_pods + "burstable.slice/kubepods-burstable-pod" + kUidUnderscored +
           ".slice/crio-conmon-" + kId + ".scope",
       std::nullopt, kUid},
      {"kind: kubelet slices inside a docker node",
       "/system.slice/docker-" + kOuterId +
           ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
           "kubelet-kubepods-besteffort-pod" +
           kUidUnderscored + ".slice/cri-containerd-" + kId + ".scope",
       kId, kUid},
      {"a static pod's UID (a manifest hash)",
       "/kubepods/burstable/pod6b1d3a3e8e1c0b4e7e0f4d1b0c9a8f7e/" + kId, kId,
       "6b1d3a3e8e1c0b4e7e0f4d1b0c9a8f7e"},
      {"a pod's own cgroup", "/kubepods/burstable/pod" + kUid, std::nullopt, kUid},
      {"a task in a sub-cgroup of a container",
       "/kubepods/burstable/pod" + kUid + "/" + kId + "/worker", kId, kUid},
      {"podman, rootful", "/machine.slice/libpod-" + kId + ".scope", kId, std::nullopt},
      {"podman, rootless, split cgroups",
       "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
           ".scope/container",
       kId, std::nullopt},
      {"podman's monitor", "/machine.slice/libpod-conmon-" + kId + ".scope", std::nullopt,
       std::nullopt},
      {"a login session", "/user.slice/user-0.slice/session-1.scope", std::nullopt, std::nullopt},
      {"the root", "/", std::nullopt, std::nullopt},
      {"empty", "", std::nullopt, std::nullopt},
      {"the docker daemon itself", "/system.slice/docker.service", std::nullopt, std::nullopt},
      {"63 hex digits are no id", "/docker/" + kId.substr(1), std::nullopt, std::nullopt},
      {"upper-case hex is no id", "/docker/3F1C" + kId.substr(4), std::nullopt, std::nullopt},
      {"a pod UID with a bad separator",
       "/kubepods/burstable/pod8c1f9e2a-5b3d-4e6f-9a7b+1c2d3e4f5a6b", std::nullopt, std::nullopt},
  };
}

TEST(ContainerOfCgroup, ReadsTheCommonRuntimesNaming) {
  for (const auto& sample : samples()) {
    SCOPED_TRACE(sample.what + ": " + sample.path);
    const ContainerInfo info = container_of_cgroup(sample.path);
    EXPECT_EQ(info.container_id, sample.container_id);
    EXPECT_EQ(info.pod_uid, sample.pod_uid);
  }
}

TEST(ContainerOfCgroup, NamesTheRuntimeWhereTheCgroupSaysIt) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      {"/system.slice/docker-" + kId + ".scope", "docker"},
      {"/docker/" + kId, "docker"},
      {"/kubepods.slice/kubepods-pod" + kUidUnderscored + ".slice/cri-containerd-" + kId + ".scope",
       "containerd"},
      {"/kubepods.slice/kubepods-pod" + kUidUnderscored + ".slice/crio-" + kId + ".scope", "cri-o"},
      {"/machine.slice/libpod-" + kId + ".scope", "podman"},
      // podman with the cgroupfs manager, as on this project's CI machine.
      {"/libpod_parent/libpod-" + kId, "podman"},
      {"/libpod_parent/" + kId, "podman"},
      // kubelet's cgroupfs driver names no runtime.
      {"/kubepods/burstable/pod" + kUid + "/" + kId, std::nullopt},
      {"/user.slice/user-0.slice/session-1.scope", std::nullopt},
  };
  for (const auto& [path, runtime] : cases) {
    SCOPED_TRACE(path);
    EXPECT_EQ(container_of_cgroup(path).runtime, runtime);
  }
}

TEST(CgroupV2Mount, FindsTheUnifiedMountOfAHybridLayout) {
  // This machine's /proc/mounts.
  const std::string hybrid =
      "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
      "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
      "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
      "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
      "cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
  auto mount = cgroup_v2_mount(hybrid);
  ASSERT_TRUE(mount) << mount.error().message();
  EXPECT_EQ(*mount, "/sys/fs/cgroup/unified");
}

TEST(CgroupV2Mount, FindsAUnifiedLayoutAndUndoesEscapes) {
  auto mount = cgroup_v2_mount(
      "sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
  ASSERT_TRUE(mount);
  EXPECT_EQ(*mount, "/sys/fs/cgroup");
  auto spaced = cgroup_v2_mount("none /mnt/my\\040cgroups cgroup2 rw 0 0\n");
  ASSERT_TRUE(spaced);
  EXPECT_EQ(*spaced, "/mnt/my cgroups");
}

TEST(CgroupV2Mount, NoCgroup2IsAnErrorWithAHint) {
  auto mount = cgroup_v2_mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n");
  ASSERT_FALSE(mount);
  EXPECT_NE(mount.error().message().find("no cgroup2"), std::string::npos);
  EXPECT_FALSE(mount.error().hint.empty());
}

// cgroup_gone reads the directory's inode and its cgroup.events: a folder
// laid out like one stands in for a cgroup here.
TEST(CgroupGone, RemovedEmptyOrReplacedCgroupsAreGone) {
  char scratch[] = "/tmp/cgroup-gone-XXXXXX";
  ASSERT_NE(mkdtemp(scratch), nullptr);
  const std::string mount = scratch;
  const std::string directory = mount + "/box";
  ASSERT_EQ(mkdir(directory.c_str(), 0755), 0);
  struct stat status;
  ASSERT_EQ(stat(directory.c_str(), &status), 0);
  const uint64_t id = status.st_ino;
  auto write_events = [&](const char* text) {
    FILE* file = std::fopen((directory + "/cgroup.events").c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs(text, file);
    std::fclose(file);
  };
  write_events("populated 1\nfrozen 0\n");
  EXPECT_FALSE(cgroup_gone(mount, "/box", id));
  EXPECT_TRUE(cgroup_gone(mount, "/box", id + 1));  // the path is another cgroup's now
  write_events("populated 0\nfrozen 0\n");
  EXPECT_TRUE(cgroup_gone(mount, "/box", id));
  EXPECT_FALSE(cgroup_gone(mount, "/", 1));  // the root never goes
  unlink((directory + "/cgroup.events").c_str());
  EXPECT_FALSE(cgroup_gone(mount, "/box", id));  // unreadable: taken as there
  rmdir(directory.c_str());
  EXPECT_TRUE(cgroup_gone(mount, "/box", id));
  rmdir(scratch);
}

TEST(CgroupV2PathIn, TakesTheUnifiedLine) {
  EXPECT_EQ(cgroup_v2_path_in("9:name=systemd:/\n4:memory:/a/b\n0::/system.slice/x.service\n"),
            "/system.slice/x.service");
  EXPECT_EQ(cgroup_v2_path_in("0::/\n"), "/");
  EXPECT_EQ(cgroup_v2_path_in("4:memory:/a/b\n"), std::nullopt);
}

// The real hierarchy: a cgroup the test creates, and removes.
class CgroupHierarchy : public testing::Test {
 protected:
  void SetUp() override {
    auto found = system_cgroup_v2_mount();
    if (!found) GTEST_SKIP() << found.error().message();
    mount_ = *found;
    relative_ = "/fl-cgroup-names-test-" + std::to_string(getpid());
    outer_ = mount_ + relative_;
    if (mkdir(outer_.c_str(), 0755) != 0) {
      const int err = errno;
      if (err == EACCES || err == EPERM || err == EROFS) {
        GTEST_SKIP() << "cannot create a cgroup under " << mount_ << " (needs root)";
      }
      FAIL() << "mkdir " << outer_ << ": " << std::strerror(err);
    }
    inner_ = outer_ + "/inner";
    ASSERT_EQ(mkdir(inner_.c_str(), 0755), 0) << std::strerror(errno);
  }
  void TearDown() override {
    if (!inner_.empty()) rmdir(inner_.c_str());
    if (!outer_.empty()) rmdir(outer_.c_str());
  }
  static uint64_t inode_of(const std::string& path) {
    struct stat status {};
    EXPECT_EQ(stat(path.c_str(), &status), 0) << path;
    return status.st_ino;
  }

  std::string mount_, relative_, outer_, inner_;
};

TEST_F(CgroupHierarchy, IdIsTheDirectorysInodeAndLeadsBackToItsPath) {
  auto id = cgroup_id_of_path(inner_);
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(*id, inode_of(inner_));
  auto path = cgroup_path_of_id(mount_, *id);
  ASSERT_TRUE(path) << path.error().message();
  EXPECT_EQ(*path, relative_ + "/inner");

  auto root_id = cgroup_id_of_path(mount_);
  ASSERT_TRUE(root_id);
  EXPECT_EQ(cgroup_path_of_id(mount_, *root_id), "/");
}

TEST_F(CgroupHierarchy, OurOwnCgroupResolvesBothWays) {
  auto own = cgroup_of_process(getpid());
  ASSERT_TRUE(own) << own.error().message();
  ASSERT_TRUE(own->starts_with("/"));
  auto id = cgroup_id_of_path(*own == "/" ? mount_ : mount_ + *own);
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(cgroup_path_of_id(mount_, *id), *own);
}

TEST_F(CgroupHierarchy, NamesCacheWalksOnAMissOnlyAndRemembersRemovedCgroups) {
  CgroupNames names(mount_);
  const uint64_t outer_id = inode_of(outer_);
  EXPECT_EQ(names.path_of(outer_id), relative_);
  EXPECT_EQ(names.walks(), 1u);

  // Created after the first walk: found by a second one.
  const std::string late = outer_ + "/late";
  ASSERT_EQ(mkdir(late.c_str(), 0755), 0) << std::strerror(errno);
  const uint64_t late_id = inode_of(late);
  EXPECT_EQ(names.path_of(inode_of(inner_)), relative_ + "/inner");  // known from the first walk
  EXPECT_EQ(names.walks(), 1u);
  EXPECT_EQ(names.path_of(late_id), relative_ + "/late");
  EXPECT_EQ(names.walks(), 2u);

  // Removed: its last interval still gets its name.
  ASSERT_EQ(rmdir(late.c_str()), 0);
  EXPECT_EQ(names.path_of(late_id), relative_ + "/late");

  // Never seen: one more walk, then no more for that id.
  const uint64_t unknown = ~uint64_t{0} - 7;
  auto missing = names.path_of(unknown);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find(std::to_string(unknown)), std::string::npos);
  EXPECT_EQ(names.walks(), 3u);
  EXPECT_FALSE(names.path_of(unknown));
  EXPECT_EQ(names.walks(), 3u);

  // A removed cgroup the last two walks did not find is forgotten: the cache
  // holds what they saw, not every cgroup ever seen.
  EXPECT_EQ(names.path_of(late_id), relative_ + "/late");  // found by walk 2 of 3
  EXPECT_FALSE(names.path_of(unknown - 1));                // walk 4
  EXPECT_FALSE(names.path_of(late_id));
  EXPECT_EQ(names.walks(), 5u);
}

TEST_F(CgroupHierarchy, NonCgroupPathsAreBadInput) {
  auto plain = cgroup_id_of_path("/tmp");
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(plain.error().message().find("not in a cgroup v2"), std::string::npos);

  auto absent = cgroup_id_of_path(outer_ + "/no-such-group");
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().errno_value, ENOENT);

  auto file = cgroup_id_of_path(outer_ + "/cgroup.procs");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message().find("not a cgroup"), std::string::npos);
}

}  // namespace
}  // namespace funclatency
