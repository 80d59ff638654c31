// A process in a mount namespace of its own: its files are opened through
// /proc/PID/root even when it keeps our root directory (`unshare -m`), and
// reported by the path the process knows them by.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "symbols/binary_locator.h"
#include "symbols/elf_symbol_resolver.h"
#include "symbols/process_files.h"
#include "waiting_process.h"

namespace funclatency {
namespace {

const std::string kUnshare = "/usr/bin/unshare";

TEST(PathInProcess, TakesOffTheRootPrefixAndReadsTheExeLink) {
  const std::string pid = std::to_string(getpid());
  EXPECT_EQ(path_in_process(getpid(), "/proc/" + pid + "/root/opt/app/bin/server"),
            "/opt/app/bin/server");
  EXPECT_EQ(path_in_process(getpid(), "/proc/" + pid + "/exe"),
            std::filesystem::read_symlink("/proc/self/exe").string());
  EXPECT_EQ(path_in_process(getpid(), "/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
  // Another process's prefix is not ours to take off.
  EXPECT_EQ(path_in_process(getpid(), "/proc/1/root/x"), "/proc/1/root/x");
  EXPECT_EQ(process_root_prefix(getpid()), "");
}

// symfix_nopie --wait, copied onto a tmpfs mounted in a new mount namespace:
// a path that exists for that process only.
class PrivateMountNamespace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kUnshare.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << kUnshare;
    char pattern[] = "/tmp/fl-private-XXXXXX";
    if (mkdtemp(pattern) == nullptr) FAIL() << "mkdtemp";
    directory_ = pattern;
    inside_ = directory_ + "/app";
    process_ = std::make_unique<testing::WaitingProcess>(std::vector<std::string>{
        kUnshare, "-m", "--propagation", "private", "sh", "-c",
        "mount -t tmpfs fl-private \"$1\" && cp \"$2\" \"$1/app\" && exec \"$1/app\" --wait", "sh",
        directory_, SYMFIX_NOPIE});
    if (!process_->ready()) {
      GTEST_SKIP() << "cannot mount in a private mount namespace (needs root)";
    }
    ASSERT_FALSE(std::filesystem::exists(inside_));
  }
  void TearDown() override {
    process_.reset();
    if (!directory_.empty()) rmdir(directory_.c_str());
  }
  std::string root() const { return "/proc/" + std::to_string(process_->pid()) + "/root"; }

  std::string directory_, inside_;
  std::unique_ptr<testing::WaitingProcess> process_;
};

TEST_F(PrivateMountNamespace, ItsFilesAreOpenedThroughItsRoot) {
  EXPECT_EQ(process_root_prefix(process_->pid()), root());
  auto executable = process_executable(process_->pid());
  ASSERT_TRUE(executable) << executable.error().message();
  EXPECT_EQ(*executable, root() + inside_);
  EXPECT_EQ(path_in_process(process_->pid(), *executable), inside_);
  auto by_path = locate_binary(inside_, process_->pid(), SearchPaths{});
  ASSERT_TRUE(by_path) << by_path.error().message();
  EXPECT_EQ(*by_path, root() + inside_);
}

TEST_F(PrivateMountNamespace, SitesShowThePathInsideAndAttachThroughTheRoot) {
  ElfSymbolResolver resolver;
  ResolveOptions options;
  options.pid = process_->pid();
  for (const std::string& binary : {std::string(), inside_, std::string("app")}) {
    SCOPED_TRACE("binary \"" + binary + "\"");
    auto resolution = resolver.resolve_detailed(TargetSpec{binary, "fast_op"}, options);
    ASSERT_TRUE(resolution) << resolution.error().message();
    ASSERT_EQ(resolution->sites.size(), 1u);
    const ProbeSite& site = resolution->sites.front();
    EXPECT_EQ(site.binary, inside_);
    EXPECT_EQ(site.attach_path, root() + inside_);
    EXPECT_EQ(site.openable_path(), root() + inside_);
    EXPECT_EQ(resolution->binary, inside_);
    EXPECT_EQ(site.file_offset,
              testing::file_offset_in_maps(process_->pid(), process_->address_of("fast_op")));
  }
}

TEST(ProcessInOurNamespace, SitesNeedNoAttachPath) {
  testing::WaitingProcess process({SYMFIX_NOPIE, "--wait"});
  ASSERT_TRUE(process.ready());
  ElfSymbolResolver resolver;
  ResolveOptions options;
  options.pid = process.pid();
  auto sites = resolver.resolve(TargetSpec{"", "fast_op"}, options);
  ASSERT_TRUE(sites) << sites.error().message();
  ASSERT_EQ(sites->size(), 1u);
  EXPECT_EQ(sites->front().binary, std::filesystem::canonical(SYMFIX_NOPIE).string());
  EXPECT_EQ(sites->front().attach_path, "");
  EXPECT_EQ(sites->front().openable_path(), sites->front().binary);
}

}  // namespace
}  // namespace funclatency
