#include "output/otlp/otlp_cli.h"

#include "output/otlp/otlp_sink.h"

namespace funclatency {

Result<std::unique_ptr<Sink>> make_otlp_sink(const OtlpCliValues& values, const EnvironmentMap& env,
                                             ExportContext context, OtlpLogFunction log) {
  auto options = resolve_otlp_options(env, values);
  if (!options) return std::unexpected(options.error());
  auto transport = make_otlp_transport(*options);
  if (!transport) return std::unexpected(transport.error());
  if (context.tool_version.empty()) context.tool_version = FUNCLATENCY_VERSION;
  return std::make_unique<OtlpSink>(std::move(*options), std::move(context), std::move(*transport),
                                    std::move(log));
}

}  // namespace funclatency
