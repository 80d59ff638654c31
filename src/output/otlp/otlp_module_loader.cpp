#include "output/exporter_module.h"
#include "output/otlp/otlp_module.h"

namespace funclatency {

Result<std::unique_ptr<Sink>> load_otlp_sink(const OtlpCliValues& values, int traced_pid,
                                             std::function<void(std::string_view)> log) {
  auto entry = load_exporter_entry(kOtlpModuleFile, kOtlpModuleEntry, "--otlp");
  if (!entry) return std::unexpected(entry.error());
  Result<std::unique_ptr<Sink>> sink = runtime_error("the OTLP exporter made no sink");
  reinterpret_cast<OtlpModuleEntry> (*entry)(OtlpModuleRequest{&values, traced_pid, std::move(log)},
                                             sink);
  return sink;
}

}  // namespace funclatency
