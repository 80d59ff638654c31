// The OTLP exporter lives in a module (funclatency-otlp.so next to the
// binary) that funclatency loads only when --otlp is given: gRPC, protobuf
// and libcurl pull in ~80 shared libraries, which cost every run tens of
// milliseconds of start-up and megabytes of memory. This header is the
// contract between the two; both sides are built from one tree.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "output/otlp/otlp_options.h"
#include "output/sink.h"

namespace funclatency {

struct OtlpModuleRequest {
  const OtlpCliValues* values = nullptr;
  int traced_pid = 0;  // 0: none
  std::function<void(std::string_view)> log;
};

// The module's one exported function (C linkage, C++ types: one toolchain).
using OtlpModuleEntry = void (*)(const OtlpModuleRequest& request,
                                 Result<std::unique_ptr<Sink>>& sink);
inline constexpr const char* kOtlpModuleEntry = "funclatency_otlp_make_sink_v1";
inline constexpr const char* kOtlpModuleFile = "funclatency-otlp.so";

// Loads the module and makes the sink, as make_otlp_sink does (options from
// the command line over OTEL_* variables; bad ones are kBadInput). A module
// that is missing or does not load is a runtime error naming its path.
Result<std::unique_ptr<Sink>> load_otlp_sink(const OtlpCliValues& values, int traced_pid,
                                             std::function<void(std::string_view)> log);

}  // namespace funclatency
