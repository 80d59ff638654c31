// Why: the frames goroutines of an exited process, or goroutines that ended,
// left open are counted lost once and deleted (collect/open_frames); a
// running goroutine's stay, as calls in flight. On a real hash shaped like
// go_stacks, reading goids from this process's memory.
#include "collect/open_frames.h"

#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf/funclatency.h"
#include "bpf_permission.h"
#include "common/unique_fd.h"

namespace funclatency {
namespace {

fl_go_stack stack_of(std::initializer_list<uint32_t> fn_ids) {
  fl_go_stack stack{};
  for (uint32_t fn_id : fn_ids) stack.frames[stack.depth++].fn_id = fn_id;
  return stack;
}

TEST(OpenGoFramesTest, FramesOfEndedGoroutinesAndProcessesAreCountedOnceAndDeleted) {
  FL_SKIP_WITHOUT_BPF();
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
  const UniqueFd map(bpf_map_create(BPF_MAP_TYPE_HASH, "fl_test_go", sizeof(fl_go_key),
                                    sizeof(fl_go_stack), 64, &opts));
  ASSERT_TRUE(map) << "bpf_map_create: errno " << errno;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const auto gone = static_cast<uint32_t>(child);
  const auto alive = static_cast<uint32_t>(getpid());
  const fl_go_key gone_a{.goid = 7, .tgid = gone, .tid = 0};
  const fl_go_key gone_b{.goid = 9, .tgid = gone, .tid = 0};
  const fl_go_key gone_empty{.goid = 11, .tgid = gone, .tid = 0};
  const fl_go_key running{.goid = 7, .tgid = alive, .tid = 0};
  const fl_go_key ended{.goid = 8, .tgid = alive, .tid = 0};
  const fl_go_key unknown{.goid = 9, .tgid = alive, .tid = 0};
  // Where each goroutine's g holds its goid now: the running one's still, the
  // ended one's g reused for goroutine 12.
  volatile uint64_t running_g_goid = 7, reused_g_goid = 12;
  const fl_go_stack a = stack_of({1, 2}), b = stack_of({2}), empty = stack_of({});
  fl_go_stack r = stack_of({1}), e = stack_of({3, 3}), u = stack_of({4});
  r.goid_at = reinterpret_cast<uint64_t>(&running_g_goid);
  e.goid_at = reinterpret_cast<uint64_t>(&reused_g_goid);
  u.goid_at = 0;  // not known yet: in flight
  ASSERT_EQ(bpf_map_update_elem(map.get(), &gone_a, &a, BPF_ANY), 0);
  ASSERT_EQ(bpf_map_update_elem(map.get(), &gone_b, &b, BPF_ANY), 0);
  ASSERT_EQ(bpf_map_update_elem(map.get(), &gone_empty, &empty, BPF_ANY), 0);
  ASSERT_EQ(bpf_map_update_elem(map.get(), &running, &r, BPF_ANY), 0);
  ASSERT_EQ(bpf_map_update_elem(map.get(), &ended, &e, BPF_ANY), 0);
  ASSERT_EQ(bpf_map_update_elem(map.get(), &unknown, &u, BPF_ANY), 0);

  const auto exited = [](uint32_t tgid) { return process_gone(tgid); };
  auto open = take_open_go_frames_of_ended(map.get(), exited);
  ASSERT_TRUE(open) << open.error().message();
  EXPECT_EQ(*open, (std::map<uint32_t, uint64_t>{{1, 1}, {2, 2}, {3, 2}}));
  fl_go_stack left{};
  EXPECT_NE(bpf_map_lookup_elem(map.get(), &gone_a, &left), 0);
  EXPECT_NE(bpf_map_lookup_elem(map.get(), &gone_empty, &left), 0);
  EXPECT_NE(bpf_map_lookup_elem(map.get(), &ended, &left), 0);
  EXPECT_EQ(bpf_map_lookup_elem(map.get(), &running, &left), 0);  // in flight: kept
  EXPECT_EQ(bpf_map_lookup_elem(map.get(), &unknown, &left), 0);
  // Counted once.
  open = take_open_go_frames_of_ended(map.get(), exited);
  ASSERT_TRUE(open) << open.error().message();
  EXPECT_TRUE(open->empty());
  // The running goroutine ends, its g reused: its frame is counted then.
  running_g_goid = 13;
  open = take_open_go_frames_of_ended(map.get(), exited);
  ASSERT_TRUE(open) << open.error().message();
  EXPECT_EQ(*open, (std::map<uint32_t, uint64_t>{{1, 1}}));
}

TEST(OpenGoFramesTest, ProcessGoneSeesZombiesAndMissingEntries) {
  EXPECT_FALSE(process_gone(static_cast<uint32_t>(getpid())));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  // Not waited for yet: a zombie once it has exited.
  for (int i = 0; i < 200 && !process_gone(static_cast<uint32_t>(child)); ++i) usleep(5000);
  EXPECT_TRUE(process_gone(static_cast<uint32_t>(child)));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(process_gone(static_cast<uint32_t>(child)));
}

}  // namespace
}  // namespace funclatency
