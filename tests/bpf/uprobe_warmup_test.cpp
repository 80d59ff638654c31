// The start-up warm-up (probe/uprobe_warmup.h) links its empty program at a
// function of the running binary itself and nowhere else, holds the link until
// released, and then takes it away: the breakpoint is gone from its own code
// and no uprobe_multi link is left. The destructor releases too (an early
// error return in run()).
#include "probe/uprobe_warmup.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bpf_permission.h"
#include "process_memory.h"

extern "C" void funclatency_uprobe_warmup_site();

namespace funclatency {
namespace {

using namespace std::chrono_literals;

// This process's bpf links of the given type (fdinfo's link_type).
int own_links(const std::string& type) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream info(entry.path());
    for (std::string line; std::getline(info, line);) {
      if (line == "link_type:\t" + type) count++;
    }
  }
  return count;
}

uint8_t first_code_byte() {
  return *reinterpret_cast<const volatile uint8_t*>(&funclatency_uprobe_warmup_site);
}

// Polls until `done` holds or 5 s have passed (closing a link waits for
// grace periods in the kernel).
template <class Done>
bool eventually(Done done) {
  for (auto give_up = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < give_up; std::this_thread::sleep_for(5ms)) {
    if (done()) return true;
  }
  return done();
}

TEST(UprobeWarmup, LinksOwnUncalledFunctionUntilReleased) {
  FL_SKIP_WITHOUT_BPF();
  const int before = own_links("uprobe_multi");
  ASSERT_NE(first_code_byte(), testing::kInt3);
  UprobeWarmup warmup;
  warmup.wait_registered();
  EXPECT_EQ(own_links("uprobe_multi"), before + 1);
  EXPECT_EQ(first_code_byte(), testing::kInt3) << "the warm-up probe is not on its own site";
  std::this_thread::sleep_for(50ms);  // held until released
  EXPECT_EQ(own_links("uprobe_multi"), before + 1);

  warmup.release();
  EXPECT_TRUE(eventually([&] { return own_links("uprobe_multi") == before; }));
  EXPECT_TRUE(eventually([] { return first_code_byte() != testing::kInt3; }));
}

TEST(UprobeWarmup, DestructorReleases) {
  FL_SKIP_WITHOUT_BPF();
  const int before = own_links("uprobe_multi");
  {
    UprobeWarmup warmup;
    warmup.wait_registered();
    EXPECT_EQ(own_links("uprobe_multi"), before + 1);
  }
  EXPECT_TRUE(eventually([&] { return own_links("uprobe_multi") == before; }));
}

TEST(UprobeWarmup, ReleasedBeforeRegisteredNeverBlocks) {
  FL_SKIP_WITHOUT_BPF();
  const int before = own_links("uprobe_multi");
  {
    UprobeWarmup warmup;
    warmup.release();
    warmup.wait_registered();  // returns at once: released counts as done
  }
  EXPECT_TRUE(eventually([&] { return own_links("uprobe_multi") == before; }));
}

}  // namespace
}  // namespace funclatency
