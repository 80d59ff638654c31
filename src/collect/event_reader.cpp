#include "collect/event_reader.h"

#include <bpf/libbpf.h>

#include <cstring>

extern "C" {
#include "bpf/funclatency.h"
}

namespace funclatency {

Result<std::unique_ptr<EventReader>> EventReader::create(int ringbuf_fd, Handler handler) {
  auto reader = std::unique_ptr<EventReader>(new EventReader(std::move(handler)));
  reader->ring_ = {ring_buffer__new(ringbuf_fd, &EventReader::on_record, reader.get(), nullptr),
                   ring_buffer__free};
  if (!reader->ring_) return runtime_error("open the BPF ring buffer", errno);
  return reader;
}

Result<void> EventReader::add_slow_calls(int ringbuf_fd, SlowHandler handler) {
  slow_handler_ = std::move(handler);
  if (ring_buffer__add(ring_.get(), ringbuf_fd, &EventReader::on_slow_record, this) < 0) {
    return runtime_error("open the slow-call ring buffer", errno);
  }
  return {};
}

int EventReader::on_slow_record(void* context, void* data, size_t size) {
  auto* self = static_cast<EventReader*>(context);
  if (size < sizeof(fl_slow_call)) return 0;
  // Records are 16 KB: handed over in place, not copied.
  self->slow_handler_(*static_cast<const fl_slow_call*>(data));
  return 0;
}

int EventReader::epoll_fd() const {
  return ring_buffer__epoll_fd(ring_.get());
}

int EventReader::on_record(void* context, void* data, size_t size) {
  auto* self = static_cast<EventReader*>(context);
  CallRecord call;
  if (size >= sizeof(fl_event_ext)) {
    fl_event_ext event;
    std::memcpy(&event, data, sizeof(event));
    const CallSplit split{event.runnable_ns, event.blocked_ns};
    call.fn_id = event.call.fn_id & ~FL_EVENT_ODD_GEN;
    call.odd_gen = (event.call.fn_id & FL_EVENT_ODD_GEN) != 0;
    call.duration_ns = event.call.duration_ns;
    call.split = (event.flags & FL_EVENT_SPLIT) ? &split : nullptr;
    if (event.flags & FL_EVENT_SELF) call.self_ns = event.self_ns;
    call.series.tgid = event.call.tgid;
    call.series.cgroup_id = event.cgroup_id;
    call.series.comm.assign(event.comm, strnlen(event.comm, sizeof(event.comm)));
    call.series.value = event.value;
    self->handler_(call);
  } else if (size >= sizeof(fl_event)) {
    fl_event event;
    std::memcpy(&event, data, sizeof(event));
    call.fn_id = event.fn_id & ~FL_EVENT_ODD_GEN;
    call.odd_gen = (event.fn_id & FL_EVENT_ODD_GEN) != 0;
    call.duration_ns = event.duration_ns;
    call.series.tgid = event.tgid;
    self->handler_(call);
  } else {
    return 0;
  }
  self->drained_++;
  return 0;
}

Result<uint64_t> EventReader::drain() {
  drained_ = 0;
  int rc = ring_buffer__consume(ring_.get());
  if (rc < 0) return runtime_error("read the BPF ring buffer", -rc);
  return drained_;
}

}  // namespace funclatency
