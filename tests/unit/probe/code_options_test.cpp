// The options a function's language cannot give, decided in one place for
// the functions named at the start and those found later.
#include "probe/code_options.h"

#include <gtest/gtest.h>

#include "bpf/funclatency.h"

namespace funclatency {
namespace {

TEST(RefuseOptions, CpuSplitIsRefusedForGoOnly) {
  const CodeOptions split{.cpu_split = true};
  EXPECT_NE(refuse_options(split, true).reason.find("--cpu-split"), std::string::npos);
  EXPECT_TRUE(refuse_options(split, false).reason.empty());
}

TEST(RefuseOptions, CArgumentsStopAtTheSixthRegisterGoGoesOnToTheNinth) {
  for (uint32_t index = 0; index <= 8; index++) {
    const CodeOptions arg{.value_source = FL_VALUE_ARG, .value_index = index};
    EXPECT_EQ(refuse_options(arg, false).reason.empty(), index < 6) << index;
    EXPECT_TRUE(refuse_options(arg, true).reason.empty()) << index;
  }
  const CodeOptions arg6{.value_source = FL_VALUE_ARG, .value_index = 6};
  EXPECT_EQ(refuse_options(arg6, false).reason.rfind("--by arg6: ", 0), 0u);
  EXPECT_FALSE(refuse_options(arg6, false).hint.empty());
}

TEST(RefuseOptions, GoErrorIsForGoCodeOtherRulesForBoth) {
  const CodeOptions go_error{.value_source = FL_VALUE_RETVAL, .value_rule = FL_RULE_GO_ERROR};
  EXPECT_FALSE(refuse_options(go_error, false).reason.empty());
  EXPECT_TRUE(refuse_options(go_error, true).reason.empty());
  const CodeOptions errno_rule{.value_source = FL_VALUE_RETVAL, .value_rule = FL_RULE_ERRNO};
  EXPECT_TRUE(refuse_options(errno_rule, false).reason.empty());
  EXPECT_TRUE(refuse_options(errno_rule, true).reason.empty());
}

}  // namespace
}  // namespace funclatency
