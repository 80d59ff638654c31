// Parsing a TARGET argument ("BINARY:FUNCTION", "lib:FUNCTION", ":FUNCTION").
#pragma once

#include <string_view>

#include "common/error.h"
#include "symbols/probe_site.h"

namespace funclatency {

// Splits `arg` at its last ':' that is not part of a C++ "::", so
// "./bin:ns::Class::method" is binary "./bin", function "ns::Class::method".
// ":FUNCTION" leaves the binary empty (the caller needs a pid then).
// A missing separator or function part is a kBadInput error.
Result<TargetSpec> parse_target(std::string_view arg, bool regex);

}  // namespace funclatency
