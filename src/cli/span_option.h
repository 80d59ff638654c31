// Parsing a span ("NAME=START -> END [any-process]"), for --span and the
// --config file's spans. Pure: no file is opened here.
#pragma once

#include <string_view>

#include "common/error.h"
#include "model/span.h"

namespace funclatency {

// START and END are [BINARY:]FUNCTION:POINT; POINT is entry, return (both
// matched by the thread), ret (the return value) or argN (argument N at the
// entry, N 0..5). Both points carry a value (matched by it) or neither does.
// END without a BINARY is in START's binary.
Result<SpanSpec> parse_span(std::string_view text);

}  // namespace funclatency
