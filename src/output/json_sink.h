// One JSON object per line per function: "interval" records as they happen
// and a "total" record per function at exit. With --cpu-split, objects
// "oncpu", "runnable" and "blocked" carry each part's histogram with the
// wall histogram's fields (count, sum_ns, ..., log2_buckets). With --by a
// record is one series of its function: "pid", "comm", "cgroup",
// "container_id" and "pod_uid" where set, "series":"other" for the calls
// folded over --max-series, and "series_folded" (how many series were, so
// far) once any was.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "output/sink.h"

namespace funclatency {

class JsonSink : public Sink {
 public:
  explicit JsonSink(std::FILE* out) : out_(out) {}
  void write(const Report& report) override;
  bool broken() const override { return broken_; }

 private:
  std::FILE* out_;
  bool broken_ = false;
};

// Pure conversion, for tests and for the sink.
nlohmann::json function_to_json(const Report& report, const FunctionReport& function);
std::string format_rfc3339(std::chrono::system_clock::time_point time);

}  // namespace funclatency
