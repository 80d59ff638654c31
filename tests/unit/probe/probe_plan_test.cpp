#include "probe/probe_plan.h"

#include <gtest/gtest.h>

#include <vector>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {
namespace {

ProbeSite site_for(const std::vector<uint8_t>& code) {
  ProbeSite site;
  site.binary = "/bin/test";
  site.symbol = "f";
  site.address = 0x1000;
  site.file_offset = 0x800;
  site.size = code.size();
  return site;
}

// push %rbp; mov %rsp,%rbp; pop %rbp; ret
const std::vector<uint8_t> kPlain = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};

TEST(ProbePlan, RetProbesWhereExceptionsCanUnwind) {
  ProbeSite site = site_for(kPlain);
  ProbePlan plan = plan_from_code(site, kPlain, true, ExitProbeChoice::kAuto);
  EXPECT_TRUE(plan.use_ret_instructions);
  ASSERT_EQ(plan.ret_file_offsets.size(), 1u);
  EXPECT_EQ(plan.ret_file_offsets[0], 0x805u);
  EXPECT_EQ(plan.fn_flags, 0u);
}

TEST(ProbePlan, ReturnProbeWithoutExceptionTablesOrWhenAsked) {
  ProbeSite site = site_for(kPlain);
  EXPECT_FALSE(plan_from_code(site, kPlain, false, ExitProbeChoice::kAuto).use_ret_instructions);
  EXPECT_FALSE(
      plan_from_code(site, kPlain, true, ExitProbeChoice::kReturnProbe).use_ret_instructions);
  EXPECT_TRUE(
      plan_from_code(site, kPlain, false, ExitProbeChoice::kRetInstructions).use_ret_instructions);
}

TEST(ProbePlan, TailJumpKeepsTheReturnProbe) {
  // push %rbp; pop %rbp; jmp far away
  std::vector<uint8_t> code = {0x55, 0x5d, 0xe9, 0x00, 0x10, 0x00, 0x00};
  ProbePlan plan = plan_from_code(site_for(code), code, true, ExitProbeChoice::kAuto);
  EXPECT_FALSE(plan.use_ret_instructions);
  EXPECT_NE(plan.exit_description.find("tail jump"), std::string::npos);
}

TEST(ProbePlan, RetAtTheEntryKeepsTheReturnProbe) {
  std::vector<uint8_t> code = {0xc3};
  ProbePlan plan = plan_from_code(site_for(code), code, true, ExitProbeChoice::kAuto);
  EXPECT_FALSE(plan.use_ret_instructions);
}

// endbr64; 4: test %edi,%edi; je 13; sub $1,%edi; jmp 4; 13: xor %eax,%eax; ret
const std::vector<uint8_t> kLoopToAfterEndbr = {0xf3, 0x0f, 0x1e, 0xfa, 0x85, 0xff, 0x74, 0x05,
                                                0x83, 0xef, 0x01, 0xeb, 0xf7, 0x31, 0xc0, 0xc3};

TEST(ProbePlan, EntryGoesBackOnTheEndbr64WhenTheFunctionJumpsPastIt) {
  ProbePlan plan =
      plan_from_code(site_for(kLoopToAfterEndbr), kLoopToAfterEndbr, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 0u);
  EXPECT_EQ(plan.fn_flags, 0u);
}

TEST(ProbePlan, EntryStaysAfterEndbr64WhenNothingJumpsThere) {
  // endbr64; push %rbp; pop %rbp; ret
  std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x5d, 0xc3};
  ProbePlan plan = plan_from_code(site_for(code), code, true, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 4u);
  EXPECT_TRUE(plan.use_ret_instructions);
  EXPECT_EQ(plan.ret_file_offsets[0], 0x806u);
}

TEST(ProbePlan, AJumpToTheProbedInstructionIsFlaggedForTheBpfSide) {
  // 0: test %edi,%edi; je 9; sub $1,%edi; jmp 0; 9: xor %eax,%eax; ret
  std::vector<uint8_t> code = {0x85, 0xff, 0x74, 0x05, 0x83, 0xef,
                               0x01, 0xeb, 0xf7, 0x31, 0xc0, 0xc3};
  ProbePlan plan = plan_from_code(site_for(code), code, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.fn_flags, FL_FN_JUMPS_TO_ENTRY);
}

TEST(ProbePlan, EntryGoesAfterALeadingEndbr64) {
  // The planner alone decides: the resolver no longer says where.
  std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x5d, 0xc3};
  ProbePlan plan = plan_from_code(site_for(code), code, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 4u);
  EXPECT_EQ(plan.entry_description, "after endbr64, +4");
  EXPECT_EQ(plan_from_code(site_for(kPlain), kPlain, false, ExitProbeChoice::kAuto).entry_skip, 0u);
}

// main.work as Go 1.19 compiles it: cmp rsp,[r14+0x10]; jbe morestack; ...
// two rets; the morestack block calls runtime.morestack_noctxt and jumps
// back to the first instruction.
const std::vector<uint8_t> kGoWork = {
    0x49, 0x3b, 0x66, 0x10, 0x76, 0x40, 0x48, 0x83, 0xec, 0x10, 0x48, 0x89, 0x6c, 0x24, 0x08,
    0x48, 0x8d, 0x6c, 0x24, 0x08, 0x48, 0x85, 0xc0, 0x75, 0x18, 0xb8, 0x40, 0x42, 0x0f, 0x00,
    0x66, 0x90, 0xe8, 0x9b, 0x8d, 0xfd, 0xff, 0x31, 0xc0, 0x48, 0x8b, 0x6c, 0x24, 0x08, 0x48,
    0x83, 0xc4, 0x10, 0xc3, 0x48, 0xff, 0xc8, 0xe8, 0xc7, 0xff, 0xff, 0xff, 0x48, 0xff, 0xc0,
    0x48, 0x8b, 0x6c, 0x24, 0x08, 0x48, 0x83, 0xc4, 0x10, 0xc3, 0x48, 0x89, 0x44, 0x24, 0x08,
    0xe8, 0x90, 0x9e, 0xfd, 0xff, 0x48, 0x8b, 0x44, 0x24, 0x08, 0xeb, 0xa9};

ProbeSite go_site(const std::vector<uint8_t>& code) {
  ProbeSite site = site_for(code);
  site.go = GoCode{"go1.19.8", 1, 19, 152};
  return site;
}

TEST(ProbePlan, GoEntryOnTheStackChecksBranchExitsOnEveryRet) {
  // Whatever --exit-probes says: a return probe kills Go programs.
  for (auto choice : {ExitProbeChoice::kAuto, ExitProbeChoice::kReturnProbe}) {
    ProbePlan plan = plan_from_code(go_site(kGoWork), kGoWork, false, choice);
    EXPECT_TRUE(plan.refused.empty()) << plan.refused;
    EXPECT_TRUE(plan.goroutine_keyed);
    EXPECT_EQ(plan.goid_offset, 152u);
    EXPECT_EQ(plan.entry_skip, 4u);  // the jbe: emulated, SP still the caller's
    EXPECT_TRUE(plan.entry_emulated);
    EXPECT_EQ(plan.fn_flags, FL_FN_GO_STACK_CHECK);
    EXPECT_EQ(plan.entry_description, "on the stack check's branch, +4");
    EXPECT_TRUE(plan.use_ret_instructions);
    EXPECT_EQ(plan.ret_file_offsets, (std::vector<uint64_t>{0x800 + 0x30, 0x800 + 0x45}));
    EXPECT_EQ(plan.exit_description, "Go 1.19, goroutine-keyed, 2 ret probes");
  }
}

TEST(ProbePlan, GoBigFrameEntryOnTheLastBranchOfItsPrologue) {
  // mov r12,rsp; sub r12,0x4db8; jb +0x89; cmp r12,[r14+0x10]; jbe +0x7f;
  // sub rsp,0x4e38; add rsp,0x4e38; ret
  std::vector<uint8_t> code = {0x49, 0x89, 0xe4, 0x49, 0x81, 0xec, 0xb8, 0x4d, 0x00, 0x00, 0x0f,
                               0x82, 0x89, 0x00, 0x00, 0x00, 0x4d, 0x3b, 0x66, 0x10, 0x0f, 0x86,
                               0x7f, 0x00, 0x00, 0x00, 0x48, 0x81, 0xec, 0x38, 0x4e, 0x00, 0x00,
                               0x48, 0x81, 0xc4, 0x38, 0x4e, 0x00, 0x00, 0xc3};
  ProbePlan plan = plan_from_code(go_site(code), code, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 20u);  // the jbe whose flags say "morestack next"
  EXPECT_EQ(plan.fn_flags, FL_FN_GO_STACK_CHECK);
  EXPECT_EQ(plan.ret_file_offsets, (std::vector<uint64_t>{0x800 + 40}));
}

TEST(ProbePlan, GoWithoutAStackCheckStartsAtTheFirstByte) {
  ProbePlan plan = plan_from_code(go_site(kPlain), kPlain, false, ExitProbeChoice::kAuto);
  EXPECT_EQ(plan.entry_skip, 0u);
  EXPECT_EQ(plan.fn_flags, 0u);
  EXPECT_TRUE(plan.goroutine_keyed);
  EXPECT_TRUE(plan.use_ret_instructions);
}

TEST(ProbePlan, GoWithoutARetIsRefusedNotGivenAReturnProbe) {
  // cmp rsp,[r14+0x10]; jbe; call; ud2 (a function that always panics)
  std::vector<uint8_t> code = {0x49, 0x3b, 0x66, 0x10, 0x76, 0x05, 0xe8,
                               0x00, 0x00, 0x00, 0x00, 0x0f, 0x0b};
  ProbePlan plan = plan_from_code(go_site(code), code, false, ExitProbeChoice::kAuto);
  EXPECT_NE(plan.refused.find("no ret instruction"), std::string::npos) << plan.refused;
  EXPECT_FALSE(plan.use_ret_instructions);
  // Its code unknown: refused too.
  EXPECT_FALSE(plan_from_code(go_site(code), {}, false, ExitProbeChoice::kAuto).refused.empty());
  // A tail jump would leave without a ret probe firing.
  std::vector<uint8_t> tail = {0x55, 0x5d, 0xe9, 0x00, 0x10, 0x00, 0x00};
  EXPECT_NE(
      plan_from_code(go_site(tail), tail, false, ExitProbeChoice::kAuto).refused.find("tail jump"),
      std::string::npos);
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
