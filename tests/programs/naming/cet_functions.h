// naming-cet's traced functions; every one starts with endbr64.
#pragma once

#include <cstdint>

#include "workload_support.h"

struct CetNode {
  CetNode* next;
  std::uint64_t visits;
};

extern "C" {
// Sleeps kCetSleepUs.
std::uint64_t cet_leaf(std::uint64_t tag);
// Recurses (not a tail call) to depth 1; each level records its own inner
// call in `truth`. Inclusive durations 300, 600, 1200, 2400 us from depth 1 to 4.
std::uint64_t cet_recurse(int depth, funclatency::workload::FunctionTruth* truth);
// Sleeps kCetSleepUs, then calls a function that throws when asked: the
// exception leaves through this function's frame.
std::uint64_t cet_throw_through(std::uint64_t tag, bool should_throw);
// Visits every node of a list; its self tail call is a jump back to the
// instruction after its endbr64 (built with -Os).
void cet_walk(CetNode* node);
}

inline constexpr std::uint64_t kCetSleepUs = 300;
inline constexpr int kCetDepth = 4;
