// libFuzzer target for the NDJSON reader of `funclatency report` and `diff`:
// any bytes either read back as a run or are refused with an Error; a run
// that reads must satisfy what the renderer and the statistics rely on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "offline/bucket_math.h"
#include "offline/run_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace funclatency::offline;
  auto run = parse_run(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!run) {
    if (run.error().context.empty()) std::abort();
    return 0;
  }
  if (run->unit_ns != 1 && run->unit_ns != 1000 && run->unit_ns != 1000000) std::abort();
  for (const Series& series : run->series) {
    for (const Record& r : series.intervals) {
      if (total_of(row_counts(r.wall, run->unit_ns)) != r.wall.count) std::abort();
      const double p99 = estimate_quantile_ns(row_counts(r.wall, run->unit_ns), run->unit_ns, 0.99);
      if (!(p99 >= 0)) std::abort();
    }
  }
  return 0;
}
