/* Recursion deeper than the kernel's 64 pending return probes per thread.
 *
 * robust-deep-c / robust-deep-cpp --depth D --calls N
 *   N outer calls of deep_recurse(D), which recurses D levels (not a tail
 *   call: each level works after its callee returns). Every level busy-waits
 *   kLevelOwnNs after its callee returns, so the call at level k (1 is the
 *   innermost) takes about k * kLevelOwnNs plus probe overhead.
 * --shallow-calls M: then M calls of deep_recurse(3) on the same thread, to
 * show that the overflow left no stale state behind.
 * The ground truth holds the outer calls' durations as the program measured
 * them, and the longest shallow call: no call the tracer times can be longer
 * than the longest of those.
 * The same source builds as C (return probes) and as C++ with exception
 * tables (probes on the ret instructions). */
#include <inttypes.h>

#include "robust_common.h"

#define LEVEL_OWN_NS 20000ull
enum { kShallowDepth = 3 };

#ifdef __cplusplus
extern "C" {
#endif
__attribute__((noinline)) uint64_t deep_recurse(int level) {
  volatile uint64_t frame_local = (uint64_t)level; /* keeps a real frame per level */
  if (level > 1) frame_local = frame_local + deep_recurse(level - 1);
  robust_spin_ns(LEVEL_OWN_NS);
  return frame_local;
}
#ifdef __cplusplus
}
#endif

/* C++ only: gives the file exception tables, as every C++ program that can
 * throw has, so funclatency probes ret instructions here. */
void robust_keep_exception_tables(int argc);

int main(int argc, char** argv) {
  struct robust_options options = {NULL, 0};
  uint64_t calls = 10, shallow_calls = 0, depth = 100;
  const struct robust_option own[] = {
      {"--calls", ROBUST_U64, &calls},
      {"--depth", ROBUST_U64, &depth},
      {"--shallow-calls", ROBUST_U64, &shallow_calls},
  };
  if (robust_parse_args(argc, argv, &options, own, sizeof own / sizeof own[0])) return 2;
  robust_keep_exception_tables(argc);
  robust_block_start_signal();
  robust_announce_and_wait(&options);
  uint64_t min_ns = UINT64_MAX, max_ns = 0, sum_ns = 0, sink = 0;
  for (uint64_t i = 0; i < calls; i++) {
    uint64_t start = robust_now_ns();
    sink += deep_recurse((int)depth);
    uint64_t duration = robust_now_ns() - start;
    sum_ns += duration;
    if (duration < min_ns) min_ns = duration;
    if (duration > max_ns) max_ns = duration;
  }
  /* The shallow calls are calls too: on a busy machine one can be switched
   * out for longer than an outer call lasts, so their longest is truth too. */
  uint64_t shallow_max_ns = 0;
  for (uint64_t i = 0; i < shallow_calls; i++) {
    uint64_t start = robust_now_ns();
    sink += deep_recurse(kShallowDepth);
    uint64_t duration = robust_now_ns() - start;
    if (duration > shallow_max_ns) shallow_max_ns = duration;
  }
  __asm__ volatile("" : : "r"(sink));
  char json[512];
  snprintf(json, sizeof json,
           "{\"program\": \"robust-deep\", \"functions\": [{\"name\": \"deep_recurse\", "
           "\"outer_calls\": %" PRIu64 ", \"depth\": %d, \"shallow_calls\": %" PRIu64
           ", \"shallow_depth\": %d, \"level_own_ns\": %llu, "
           "\"outer_min_ns\": %" PRIu64 ", \"outer_max_ns\": %" PRIu64
           ", \"outer_sum_ns\": %" PRIu64 ", \"shallow_max_ns\": %" PRIu64 "}]}",
           calls, (int)depth, shallow_calls, (int)kShallowDepth, LEVEL_OWN_NS, min_ns, max_ns,
           sum_ns, shallow_max_ns);
  return robust_write_truth(&options, json);
}
