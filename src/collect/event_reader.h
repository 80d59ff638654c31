// Drains the BPF ring buffer. Records are submitted without a wakeup, so the
// owner polls on a timer; the BPF side forces a wakeup only when the ring
// fills past a threshold.
#pragma once

#include <functional>
#include <memory>

#include "collect/aggregator.h"
#include "common/error.h"

struct ring_buffer;

namespace funclatency {

class EventReader {
 public:
  using Handler = std::function<void(const CallRecord& call)>;
  static Result<std::unique_ptr<EventReader>> create(int ringbuf_fd, Handler handler);
  ~EventReader();
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;

  // An fd that becomes readable when the kernel forces a wakeup.
  int epoll_fd() const;
  // Consumes every record available now; returns how many.
  Result<uint64_t> drain();

 private:
  explicit EventReader(Handler handler) : handler_(std::move(handler)) {}
  static int on_record(void* context, void* data, size_t size);
  Handler handler_;
  ring_buffer* ring_ = nullptr;
  uint64_t drained_ = 0;
};

}  // namespace funclatency
