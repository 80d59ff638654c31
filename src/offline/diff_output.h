// How `funclatency diff` shows its result: a table for people, JSON for
// machines. Pure formatting.
#pragma once

#include <string>

#include "offline/run_diff.h"

namespace funclatency::offline {

std::string format_diff_table(const DiffResult& result, uint64_t unit_ns);
std::string format_diff_json(const DiffResult& result);

// "1.23 ms", "456 us": a duration in the unit that reads best.
std::string format_duration(double ns);

}  // namespace funclatency::offline
