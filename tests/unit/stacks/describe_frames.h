// For the stack tests' failure messages: frames one per line, with their
// addresses, as the outputs name them (frame_text).
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

}  // namespace funclatency
