#include "symbols/binary_locator.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbols/process_files.h"
#include "waiting_process.h"

namespace funclatency {
namespace {

std::string real(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) != nullptr ? buffer : "";
}

TEST(LocateBinary, RelativePathBecomesAbsoluteAndResolved) {
  const std::string fixture = SYMFIX_PIE_CET;
  const std::string directory = fixture.substr(0, fixture.rfind('/'));
  char previous[PATH_MAX];
  ASSERT_NE(getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(chdir(directory.c_str()), 0);
  auto located = locate_binary("./symfix_pie_cet", std::nullopt, {});
  ASSERT_EQ(chdir(previous), 0);
  ASSERT_TRUE(located) << located.error().message();
  EXPECT_EQ(*located, real(fixture));
  EXPECT_TRUE(located->starts_with('/'));
}

TEST(LocateBinary, ProgramNameIsFoundOnPath) {
  auto located = locate_binary("sh", std::nullopt, {});
  ASSERT_TRUE(located) << located.error().message();
  EXPECT_EQ(*located, real("/bin/sh"));
}

TEST(LocateBinary, MissingPathIsBadInputNamingIt) {
  auto located = locate_binary("./no-such-binary", std::nullopt, {});
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(located.error().message().find("./no-such-binary"), std::string::npos);
}

TEST(LocateBinary, UnknownNameIsBadInput) {
  auto located = locate_binary("no-such-program-or-library-xyz", std::nullopt, {});
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(located.error().message().find("no-such-program-or-library-xyz"), std::string::npos);
}

TEST(LocateBinary, EmptyBinaryNeedsAPid) {
  auto located = locate_binary("", std::nullopt, {});
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(located.error().message().find(":FUNCTION"), std::string::npos);
  EXPECT_NE(located.error().hint.find("-p PID"), std::string::npos);
}

TEST(LocateBinary, EmptyBinaryWithPidIsItsExecutable) {
  testing::WaitingProcess process({SYMFIX_NOPIE, "--wait"});
  ASSERT_TRUE(process.ready());
  auto located = locate_binary("", process.pid(), {});
  ASSERT_TRUE(located) << located.error().message();
  EXPECT_EQ(*located, real(SYMFIX_NOPIE));
}

TEST(LocateBinary, PidThatDoesNotExistIsBadInput) {
  const int pid = testing::unused_pid();
  ASSERT_GT(pid, 0);
  auto located = locate_binary("", pid, {});
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(located.error().message(), "no process with PID " + std::to_string(pid));
}

TEST(LocateBinary, NameWithPidIsFoundInItsMappings) {
  testing::WaitingProcess process({SYMFIX_USES_LIB});
  ASSERT_TRUE(process.ready());
  // The library is in no loader path: only the process's mappings know it.
  for (const char* name : {"symfix", "libsymfix", "libsymfix.so.1", "libsymfix.so"}) {
    auto located = locate_binary(name, process.pid(), {});
    ASSERT_TRUE(located) << name << ": " << located.error().message();
    EXPECT_EQ(*located, real(SYMFIX_LIB)) << name;
  }
  auto program = locate_binary("symfix_uses_lib", process.pid(), {});
  ASSERT_TRUE(program) << program.error().message();
  EXPECT_EQ(*program, real(SYMFIX_USES_LIB));
  auto libc = locate_binary("c", process.pid(), {});
  ASSERT_TRUE(libc) << libc.error().message();
  EXPECT_NE(libc->find("libc.so"), std::string::npos) << *libc;
}

TEST(LocateBinary, LibraryThatTheProcessLoadsLaterIsFoundInItsMappingsThen) {
  testing::WaitingProcess process({SYMFIX_DLOPEN, SYMFIX_LIB});
  ASSERT_TRUE(process.ready());
  SearchPaths nowhere;
  nowhere.loader_cache = "/nonexistent/ld.so.cache";
  nowhere.library_dirs = {};
  EXPECT_FALSE(locate_binary("symfix", process.pid(), nowhere));

  const auto mapped_symfix = [&]() -> std::string {
    auto files = executable_mappings(process.pid());
    if (!files) return {};
    for (const auto& file : *files) {
      if (target_names_file("symfix", file)) return file;
    }
    return {};
  };
  EXPECT_EQ(mapped_symfix(), "");
  ASSERT_EQ(kill(process.pid(), SIGUSR1), 0);
  std::string loaded;
  for (int attempt = 0; attempt < 500 && loaded.empty(); ++attempt) {
    usleep(10000);
    loaded = mapped_symfix();
  }
  ASSERT_NE(loaded, "") << "the process did not map the library";
  EXPECT_TRUE(target_names_file(SYMFIX_LIB, loaded));
  EXPECT_FALSE(target_names_file("c", loaded));
  auto located = locate_binary("symfix", process.pid(), nowhere);
  ASSERT_TRUE(located) << located.error().message();
  EXPECT_EQ(*located, real(SYMFIX_LIB));
}

TEST(TargetNamesFile, NamesPathsAndLibraries) {
  EXPECT_TRUE(target_names_file("c", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_TRUE(target_names_file("libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_TRUE(target_names_file("app", "/opt/bin/app"));
  EXPECT_TRUE(target_names_file("/opt/bin/app", "/opt/bin/app"));
  EXPECT_FALSE(target_names_file("", "/opt/bin/app"));
  EXPECT_FALSE(target_names_file("ap", "/opt/bin/app"));
  EXPECT_FALSE(target_names_file("c", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"));
}

TEST(LocateBinary, LibraryNotFoundIsBadInputSayingWhereItLooked) {
  auto located = locate_binary("libsymfix", std::nullopt, {});
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(located.error().message().find("libsymfix"), std::string::npos);
  EXPECT_NE(located.error().hint.find("/etc/ld.so.cache"), std::string::npos);
}

}  // namespace
}  // namespace funclatency
