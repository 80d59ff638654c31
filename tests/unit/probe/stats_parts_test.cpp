// Where each part of a kernel slot sits in fn_stats: the wall time, the
// --cpu-split parts, then the --self part, whichever are on.
#include <gtest/gtest.h>

#include "probe/bpf_object.h"

namespace funclatency {
namespace {

TEST(StatsParts, CountsThePartsThatAreOn) {
  EXPECT_EQ(stats_parts(false, false), 1u);
  EXPECT_EQ(stats_parts(true, false), uint32_t{FL_CALL_PARTS});
  EXPECT_EQ(stats_parts(false, true), 2u);
  EXPECT_EQ(stats_parts(true, true), uint32_t{FL_CALL_PARTS} + 1);
}

TEST(StatsParts, SelfFollowsTheSplitsParts) {
  EXPECT_EQ(part_at_entry(0, false, true), uint32_t{FL_PART_WALL});
  EXPECT_EQ(part_at_entry(1, false, true), uint32_t{FL_PART_SELF});
  EXPECT_EQ(part_at_entry(0, true, true), uint32_t{FL_PART_WALL});
  EXPECT_EQ(part_at_entry(1, true, true), uint32_t{FL_PART_ONCPU});
  EXPECT_EQ(part_at_entry(3, true, true), uint32_t{FL_PART_BLOCKED});
  EXPECT_EQ(part_at_entry(FL_CALL_PARTS, true, true), uint32_t{FL_PART_SELF});
  // Without --self the split's entries are the parts themselves.
  for (uint32_t entry = 0; entry < FL_CALL_PARTS; entry++) {
    EXPECT_EQ(part_at_entry(entry, true, false), entry);
  }
}

}  // namespace
}  // namespace funclatency
