// For the stack tests: frames one per line, with their addresses, as the
// outputs name them (frame_text), for failure messages; where a frame is.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "model/report.h"

namespace funclatency {

inline std::string describe(const std::vector<StackFrame>& frames) {
  std::string text;
  for (const StackFrame& frame : frames) {
    text += fmt::format("{:#x} {}\n", frame.address, frame_text(frame));
  }
  return text;
}

// The index of the first frame named `symbol` (or starting with it, for
// gtest's long names), or -1.
inline int index_of(const std::vector<StackFrame>& frames, const std::string& symbol,
                    bool prefix = false) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (prefix ? frames[i].symbol.starts_with(symbol) : frames[i].symbol == symbol) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace funclatency
