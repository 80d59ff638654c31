// The OTLP exporter's module (funclatency-otlp.so, see exporter_module.h):
// the contract between the binary and the module.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "model/sink.h"
#include "output/otlp/otlp_options.h"

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
// the command line over OTEL_* variables; bad ones are kBadInput).
Result<std::unique_ptr<Sink>> load_otlp_sink(const OtlpCliValues& values, int traced_pid,
                                             std::function<void(std::string_view)> log);

}  // namespace funclatency
