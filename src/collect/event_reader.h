// Drains the BPF ring buffer. Records are submitted without a wakeup, so the
// owner polls on a timer; the BPF side forces a wakeup only when the ring
// fills past a threshold.
#pragma once

#include <functional>
#include <memory>

#include "collect/aggregator.h"
#include "common/error.h"
#include "common/non_copyable.h"

struct ring_buffer;
struct fl_slow_call;

namespace funclatency {

class EventReader : NonCopyable {
 public:
  using Handler = std::function<void(const CallRecord& call)>;
  static Result<std::unique_ptr<EventReader>> create(int ringbuf_fd, Handler handler);
  // --slowest/--slower-than: also drains the slow_calls ring (same epoll fd).
  using SlowHandler = std::function<void(const fl_slow_call& call)>;
  Result<void> add_slow_calls(int ringbuf_fd, SlowHandler handler);

  // An fd that becomes readable when the kernel forces a wakeup.
  int epoll_fd() const;
  // Consumes every record available now; returns how many.
  Result<uint64_t> drain();

 private:
  explicit EventReader(Handler handler) : handler_(std::move(handler)) {}
  static int on_record(void* context, void* data, size_t size);
  static int on_slow_record(void* context, void* data, size_t size);
  Handler handler_;
  SlowHandler slow_handler_;
  // Freed by ring_buffer__free (as probe/exec_watch.h holds its own ring).
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> ring_{nullptr, nullptr};
  uint64_t drained_ = 0;
};

}  // namespace funclatency
