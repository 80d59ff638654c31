#include <gtest/gtest.h>

#include <vector>

#include "probe/probe_plan.h"

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {
namespace {

ProbeSite site_for(const std::vector<uint8_t>& code, uint32_t entry_skip) {
  ProbeSite site;
  site.binary = "/bin/test";
  site.symbol = "f";
  site.address = 0x1000;
  site.file_offset = 0x800;
  site.size = code.size();
  site.entry_skip = entry_skip;
  return site;
}

// push %rbp; mov %rsp,%rbp; pop %rbp; ret
const std::vector<uint8_t> kPlain = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};

TEST(ProbePlan, RetProbesWhereExceptionsCanUnwind) {
  ProbeSite site = site_for(kPlain, 0);
  ProbePlan plan = plan_from_code(site, kPlain, true, ExitProbeChoice::kAuto);
  EXPECT_TRUE(plan.use_ret_instructions);
  ASSERT_EQ(plan.ret_file_offsets.size(), 1u);
  EXPECT_EQ(plan.ret_file_offsets[0], 0x805u);
  EXPECT_EQ(plan.fn_flags, 0u);
}

TEST(ProbePlan, ReturnProbeWithoutExceptionTablesOrWhenAsked) {
  ProbeSite site = site_for(kPlain, 0);
  EXPECT_FALSE(plan_from_code(site, kPlain, false, ExitProbeChoice::kAuto).use_ret_instructions);
  EXPECT_FALSE(
      plan_from_code(site, kPlain, true, ExitProbeChoice::kReturnProbe).use_ret_instructions);
  EXPECT_TRUE(
      plan_from_code(site, kPlain, false, ExitProbeChoice::kRetInstructions).use_ret_instructions);
}

TEST(ProbePlan, TailJumpKeepsTheReturnProbe) {
  // push %rbp; pop %rbp; jmp far away
  std::vector<uint8_t> code = {0x55, 0x5d, 0xe9, 0x00, 0x10, 0x00, 0x00};
  ProbePlan plan = plan_from_code(site_for(code, 0), code, true, ExitProbeChoice::kAuto);
  EXPECT_FALSE(plan.use_ret_instructions);
  EXPECT_NE(plan.exit_description.find("tail jump"), std::string::npos);
}

TEST(ProbePlan, RetAtTheEntryKeepsTheReturnProbe) {
  std::vector<uint8_t> code = {0xc3};
  ProbePlan plan = plan_from_code(site_for(code, 0), code, true, ExitProbeChoice::kAuto);
  EXPECT_FALSE(plan.use_ret_instructions);
}

// endbr64; 4: test %edi,%edi; je 13; sub $1,%edi; jmp 4; 13: xor %eax,%eax; ret
const std::vector<uint8_t> kLoopToAfterEndbr = {0xf3, 0x0f, 0x1e, 0xfa, 0x85, 0xff, 0x74, 0x05,
                                                0x83, 0xef, 0x01, 0xeb, 0xf7, 0x31, 0xc0, 0xc3};

TEST(ProbePlan, EntryGoesBackOnTheEndbr64WhenTheFunctionJumpsPastIt) {
  ProbePlan plan =
      plan_from_code(site_for(kLoopToAfterEndbr, 4), kLoopToAfterEndbr, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 0u);
  EXPECT_EQ(plan.fn_flags, 0u);
}

TEST(ProbePlan, EntryStaysAfterEndbr64WhenNothingJumpsThere) {
  // endbr64; push %rbp; pop %rbp; ret
  std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x5d, 0xc3};
  ProbePlan plan = plan_from_code(site_for(code, 4), code, true, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 4u);
  EXPECT_TRUE(plan.use_ret_instructions);
  EXPECT_EQ(plan.ret_file_offsets[0], 0x806u);
}

TEST(ProbePlan, AJumpToTheProbedInstructionIsFlaggedForTheBpfSide) {
  // 0: test %edi,%edi; je 9; sub $1,%edi; jmp 0; 9: xor %eax,%eax; ret
  std::vector<uint8_t> code = {0x85, 0xff, 0x74, 0x05, 0x83, 0xef, 0x01,
                               0xeb, 0xf7, 0x31, 0xc0, 0xc3};
  ProbePlan plan = plan_from_code(site_for(code, 0), code, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.fn_flags, FL_FN_JUMPS_TO_ENTRY);
}

TEST(ProbePlan, AnalyzeCodeFindsRetsJumpsAndTargets) {
  CodeFacts facts = analyze_code(kLoopToAfterEndbr, 0x1000);
  EXPECT_TRUE(facts.decoded);
  EXPECT_EQ(facts.rets, std::vector<uint64_t>{0x100f});
  EXPECT_EQ(facts.jump_targets, (std::vector<uint64_t>{0x1004, 0x100d}));
  EXPECT_TRUE(facts.tail_jumps.empty());
}

}  // namespace
}  // namespace funclatency
