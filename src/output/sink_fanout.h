// Every sink of a run behind one Sink: each report goes to all of them, its
// names (symbols, paths, comm, cgroup, threads, frames) made valid UTF-8 once
// on the way, so every output shows the same text and an exporter keys its
// series on what it exposes. Names come from symbol tables, file paths and
// processes, which may hold any bytes; JSON, OTLP and Prometheus need UTF-8.
#pragma once

#include <vector>

#include "common/error.h"
#include "model/report.h"
#include "model/sink.h"

namespace funclatency {

// Makes every name of `report` valid UTF-8 (bytes that are not become
// U+FFFD); false when all already were, and then nothing changed.
bool make_names_valid(Report& report);
bool make_names_valid(SlowCallReport& slow);

class SinkFanout : public Sink {
 public:
  // `sink` is not owned and must outlive the fan-out.
  void add(Sink* sink) { sinks_.push_back(sink); }
  bool empty() const { return sinks_.empty(); }

  Result<void> start() override;
  void write(const Report& report) override;
  void write_slow_call(const SlowCallReport& slow) override;
  void close() override;
  bool broken() const override;

 private:
  std::vector<Sink*> sinks_;
};

}  // namespace funclatency
