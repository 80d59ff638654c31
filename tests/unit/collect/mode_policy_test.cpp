#include "collect/mode_policy.h"

#include <gtest/gtest.h>

namespace funclatency {
namespace {

TEST(ModePolicy, SwitchesHotFunctionsToKernelAndBackAfterACalmSpell) {
  ModePolicy policy(2, ModePolicyOptions{1000, 250, 1.0});
  auto switches = policy.observe({100, 600}, {0, 0}, 0.5);  // 200/s and 1200/s
  ASSERT_EQ(switches.size(), 1u);
  EXPECT_EQ(switches[0].fn_id, 1u);
  EXPECT_TRUE(switches[0].to_kernel);
  EXPECT_TRUE(policy.in_kernel(1));
  EXPECT_FALSE(policy.in_kernel(0));

  EXPECT_TRUE(policy.observe({0, 50}, {0, 0}, 0.5).empty());  // calm for 0.5 s: not yet
  switches = policy.observe({0, 50}, {0, 0}, 0.5);            // calm for 1 s
  ASSERT_EQ(switches.size(), 1u);
  EXPECT_FALSE(switches[0].to_kernel);
  EXPECT_FALSE(policy.in_kernel(1));
}

TEST(ModePolicy, LostRecordsSwitchAtOnce) {
  ModePolicy policy(1, ModePolicyOptions{1e9, 1, 1.0});
  auto switches = policy.observe({10}, {3}, 1.0);
  ASSERT_EQ(switches.size(), 1u);
  EXPECT_NE(switches[0].reason.find("3 records lost"), std::string::npos);
}

TEST(ModePolicy, ABusySpellResetsTheCalmClock) {
  ModePolicy policy(1, ModePolicyOptions{1000, 250, 1.0});
  policy.observe({2000}, {0}, 1.0);
  policy.observe({0}, {0}, 0.6);
  policy.observe({500}, {0}, 1.0);                     // busy again
  EXPECT_TRUE(policy.observe({0}, {0}, 0.6).empty());  // only 0.6 s calm
  EXPECT_TRUE(policy.in_kernel(0));
}

}  // namespace
}  // namespace funclatency
