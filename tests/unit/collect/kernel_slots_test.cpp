// KernelSlots alone: who holds which kernel slot, and when a slot a function
// left is free again (the bookkeeping collect/kernel_slots.h promises).
#include "collect/kernel_slots.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

namespace funclatency {
namespace {

using std::chrono::milliseconds;
using Clock = KernelSlots::Clock;

constexpr auto kCooling = milliseconds(500);

TEST(KernelSlots, TakesFreeSlotsInOrderUntilNoneIsLeft) {
  KernelSlots slots(2, {}, kCooling);
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_TRUE(slots.any_free());
  EXPECT_EQ(slots.take(7), 0u);
  EXPECT_EQ(slots.take(9), 1u);
  EXPECT_FALSE(slots.any_free());
  EXPECT_EQ(slots.take(11), std::nullopt);
  EXPECT_EQ(slots.slot_of(7), 0u);
  EXPECT_EQ(slots.slot_of(9), 1u);
  EXPECT_EQ(slots.slot_of(11), std::nullopt);
  EXPECT_EQ(slots.owner(1), 9u);
}

TEST(KernelSlots, StartsWithTheOwnersItIsGiven) {
  KernelSlots slots(3, {std::nullopt, 4u}, kCooling);
  EXPECT_EQ(slots.owner(0), std::nullopt);
  EXPECT_EQ(slots.owner(1), 4u);
  EXPECT_EQ(slots.owner(2), std::nullopt);
  EXPECT_EQ(slots.slot_of(4), 1u);
  EXPECT_EQ(slots.take(5), 0u);
  EXPECT_EQ(slots.take(6), 2u);
}

TEST(KernelSlots, AReleasedSlotCoolsBeforeItIsFree) {
  KernelSlots slots(1, {}, kCooling);
  const Clock::time_point start{};
  ASSERT_EQ(slots.take(3), 0u);
  slots.release(3, start);
  // Cooling: still the function's (a call that read its old config may add
  // to it), not its slot any more, and not free for another.
  EXPECT_TRUE(slots.any_cooling());
  EXPECT_EQ(slots.owner(0), 3u);
  EXPECT_EQ(slots.slot_of(3), std::nullopt);
  EXPECT_FALSE(slots.any_free());
  EXPECT_EQ(slots.take(8), std::nullopt);

  EXPECT_TRUE(slots.reclaim(start + kCooling - milliseconds(1)).empty());
  EXPECT_EQ(slots.reclaim(start + kCooling), std::vector<uint32_t>{0});
  EXPECT_FALSE(slots.any_cooling());
  EXPECT_EQ(slots.owner(0), std::nullopt);
  EXPECT_EQ(slots.take(8), 0u);
  // Reclaimed once: a later reclaim frees nothing more.
  EXPECT_TRUE(slots.reclaim(start + 10 * kCooling).empty());
}

TEST(KernelSlots, ASecondReleaseKeepsTheFirstCoolingStart) {
  KernelSlots slots(1, {}, kCooling);
  const Clock::time_point start{};
  ASSERT_EQ(slots.take(3), 0u);
  slots.release(3, start);
  slots.release(3, start + kCooling);  // does not restart the cooling
  EXPECT_EQ(slots.reclaim(start + kCooling), std::vector<uint32_t>{0});
}

TEST(KernelSlots, ReleasingAFunctionWithoutASlotChangesNothing) {
  KernelSlots slots(2, {}, kCooling);
  ASSERT_EQ(slots.take(1), 0u);
  slots.release(2, Clock::time_point{});
  EXPECT_FALSE(slots.any_cooling());
  EXPECT_EQ(slots.slot_of(1), 0u);
  EXPECT_TRUE(slots.reclaim(Clock::time_point{} + 10 * kCooling).empty());
}

}  // namespace
}  // namespace funclatency
