// Why: exit-fast --plugin makes its slow calls through this library, loaded
// before any call but reached by no fast call's stack: naming those stacks
// after the process exited needs its file opened while the process ran.
#include <stdint.h>

static volatile uint64_t plugin_sink;

// Calls `call` (exit_fast_call) slowly; uses its result after the call, so
// this frame stays on the stack.
__attribute__((noinline)) uint64_t plugin_slow_path(uint64_t work,
                                                    uint64_t (*call)(uint64_t, int)) {
  const uint64_t result = call(work, 1);
  plugin_sink = plugin_sink + result;
  return result + 5;
}
