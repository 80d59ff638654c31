// What the binary links of the OTLP exporter: the call into its module.
#include "output/exporter_module.h"
#include "output/otlp/otlp_module.h"

namespace funclatency {

Result<std::unique_ptr<Sink>> load_otlp_sink(const OtlpCliValues& values, int traced_pid,
                                             std::function<void(std::string_view)> log) {
  return sink_from_module<OtlpModuleEntry>(kOtlpModuleFile, kOtlpModuleEntry, "--otlp", "OTLP",
                                           OtlpModuleRequest{&values, traced_pid, std::move(log)});
}

}  // namespace funclatency
