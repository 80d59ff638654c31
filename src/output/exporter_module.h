// Exporters whose libraries are heavy (gRPC, protobuf, libcurl for OTLP;
// cpp-httplib and OpenSSL for Prometheus) are modules next to the binary,
// loaded only when their option is given: linked in, their ~90 shared
// libraries and initializers cost every run ~25 ms of start-up and ~11 MB of
// memory here, tracing or not. Each module exports one C-linkage entry; both
// sides are built from one tree, so its C++ types match.
#pragma once

#include <string>

#include "common/error.h"

namespace funclatency {

// The address of `entry` in the module `file` (a name, looked up in the
// folder of the running binary). The module stays loaded to the end: the
// sinks it makes run its code. Missing or broken: a runtime error naming the
// path and `option`, the option that needs it.
Result<void*> load_exporter_entry(const std::string& file, const char* entry, const char* option);

}  // namespace funclatency
