// Why: the console prints a slow call's time of day in local time and the
// JSON records print RFC 3339 in UTC, both to the microsecond: one split of
// a time point into whole seconds (for fmt's calendar) and microseconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace funclatency {

struct SecondsAndMicros {
  std::time_t seconds = 0;  // since the epoch, whole
  int64_t micros = 0;       // 0..999999 past `seconds`
};

inline SecondsAndMicros split_micros(std::chrono::system_clock::time_point time) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch());
  auto seconds = std::chrono::floor<std::chrono::seconds>(micros);
  return {static_cast<std::time_t>(seconds.count()), (micros - seconds).count()};
}

}  // namespace funclatency
