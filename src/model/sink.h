// Where reports go. Each sink owns its transport; write() must not block the
// collector for long (exporters queue and send on their own thread).
#pragma once

#include "common/error.h"
#include "model/report.h"

namespace funclatency {

class Sink {
 public:
  virtual ~Sink() = default;
  // Begins whatever reads from the network (the Prometheus server's
  // requests); called once, after the privileges are dropped, so no byte a
  // client sends is parsed with them. Opening (binding) came before.
  virtual Result<void> start() { return {}; }
  virtual void write(const Report& report) = 0;
  // --slower-than: one call as it ends (console and JSON print it; the
  // exporters carry slow calls as exemplars of their reports instead).
  virtual void write_slow_call(const SlowCallReport& /*slow*/) {}
  // Last chance to flush, bounded in time; called once before exit.
  virtual void close() {}
  // True once the sink can no longer deliver (e.g. stdout closed): the run
  // stops, as a tool piped into `head` should.
  virtual bool broken() const { return false; }
};

}  // namespace funclatency
