// parse_process_maps on /proc/PID/maps lines of every kind, and
// find_mapping's edges.
#include "stacks/process_maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace funclatency {
namespace {

constexpr std::string_view kMaps =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234      /usr/bin/target app\n"
    "55d0c0a02000-55d0c0a05000 r-xp 00002000 fd:01 1234      /usr/bin/target app\n"
    "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
    "7f1000000000-7f1000100000 r-xp 00028000 fd:01 99        /usr/lib/libgone.so (deleted)\n"
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0                          [vdso]\n"
    "not a mapping\n"
    "7fffffffe000-7fffffffd000 r-xp 00000000 00:00 0 [backwards]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

TEST(ProcessMapsTest, ParsesEveryKindOfLine) {
  const auto maps = parse_process_maps(kMaps);
  ASSERT_EQ(maps.size(), 7u);
  EXPECT_EQ(maps[0].start, 0x55d0c0a00000u);
  EXPECT_EQ(maps[0].end, 0x55d0c0a02000u);
  EXPECT_FALSE(maps[0].executable);
  EXPECT_EQ(maps[0].path, "/usr/bin/target app");  // spaces kept
  EXPECT_TRUE(maps[0].is_file());
  EXPECT_TRUE(maps[1].executable);
  EXPECT_EQ(maps[1].file_offset, 0x2000u);
  EXPECT_EQ(maps[1].inode, 1234u);
  EXPECT_EQ(maps[2].path, "");
  EXPECT_FALSE(maps[2].is_file());
  EXPECT_TRUE(maps[3].is_file());
  EXPECT_TRUE(maps[3].is_deleted());
  EXPECT_EQ(maps[3].file_offset, 0x28000u);
  EXPECT_EQ(maps[3].file_path(), "/usr/lib/libgone.so");
  EXPECT_EQ(maps[1].file_path(), "/usr/bin/target app");
  EXPECT_EQ(maps[4].path, "[stack]");
  EXPECT_FALSE(maps[4].is_file());
  EXPECT_EQ(maps[5].path, "[vdso]");
  EXPECT_TRUE(maps[5].executable);
  EXPECT_EQ(maps[6].path, "[vsyscall]");
}

TEST(ProcessMapsTest, FindsTheMappingHoldingAnAddress) {
  const auto maps = parse_process_maps(kMaps);
  EXPECT_EQ(find_mapping(maps, 0x55d0c0a00000u), &maps[0]);
  EXPECT_EQ(find_mapping(maps, 0x55d0c0a01fffu), &maps[0]);
  EXPECT_EQ(find_mapping(maps, 0x55d0c0a02000u), &maps[1]);
  EXPECT_EQ(find_mapping(maps, 0x55d0c0a05000u), nullptr);  // end is exclusive
  EXPECT_EQ(find_mapping(maps, 0x1000u), nullptr);
  EXPECT_EQ(find_mapping(maps, 0x7f1000000123u), &maps[3]);
  EXPECT_EQ(find_mapping({}, 0x1000u), nullptr);
}

TEST(ProcessMapsTest, ReadsItsOwnMaps) {
  const auto maps = read_process_maps("/proc", getpid());
  ASSERT_TRUE(maps.has_value()) << maps.error().message();
  const auto* here = find_mapping(*maps, reinterpret_cast<uint64_t>(&read_process_maps));
  ASSERT_NE(here, nullptr);
  EXPECT_TRUE(here->executable);
  EXPECT_TRUE(here->is_file());
  const auto missing = read_process_maps("/nonexistent-proc", getpid());
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("/nonexistent-proc/"), std::string::npos);
  EXPECT_EQ(missing.error().errno_value, ENOENT);
}

}  // namespace
}  // namespace funclatency
