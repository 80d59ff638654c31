// DwarfUnwinder's edges: reads only inside the copied window, and with no
// file placed a walk gives the first frame alone.
#include "stacks/dwarf_unwinder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace funclatency {
namespace {

TEST(DwarfUnwinderTest, ReadsOnlyInsideTheWindow) {
  std::vector<uint8_t> bytes(24);
  const uint64_t value = 0x1122334455667788;
  std::memcpy(bytes.data() + 16, &value, 8);
  const MemoryWindow window{0x1000, bytes};
  uint64_t read = 0;
  EXPECT_TRUE(window.read(0x1010, read));
  EXPECT_EQ(read, value);
  EXPECT_TRUE(window.read(0x1000, read));
  EXPECT_FALSE(window.read(0x1011, read));  // would run past the end
  EXPECT_FALSE(window.read(0x1018, read));
  EXPECT_FALSE(window.read(0xff8, read));  // below
  EXPECT_FALSE(window.read(~uint64_t{0} - 3, read));
  EXPECT_FALSE(MemoryWindow{}.read(0, read));
}

TEST(DwarfUnwinderTest, WithoutFilesGivesTheFirstFrameOnly) {
  DwarfUnwinder unwinder(getpid());
  UserRegisters regs{};
  regs.ip = 0x401000;
  regs.sp = 0x7ff000;
  std::vector<uint64_t> pcs;
  unwinder.walk(regs, MemoryWindow{}, 64, [&](uint64_t pc, bool activation) {
    EXPECT_TRUE(activation);
    pcs.push_back(pc);
    return true;
  });
  EXPECT_EQ(pcs, std::vector<uint64_t>{0x401000});
  unwinder.walk(regs, MemoryWindow{}, 0, [&](uint64_t pc, bool) {
    pcs.push_back(pc);
    return true;
  });
  EXPECT_EQ(pcs.size(), 1u);
  EXPECT_FALSE(unwinder.add_module("missing", "/nonexistent/file.so", 0));
}

}  // namespace
}  // namespace funclatency
