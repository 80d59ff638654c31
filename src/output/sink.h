// Where reports go. Each sink owns its transport; write() must not block the
// collector for long (exporters queue and send on their own thread).
#pragma once

#include "output/report.h"

namespace funclatency {

class Sink {
 public:
  virtual ~Sink() = default;
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
