// Built into funclatency-otlp.so only: the entry the binary looks up.
#include "output/otlp/otlp_module.h"

#include "output/otlp/export_context.h"
#include "output/otlp/otlp_cli.h"

extern "C" [[gnu::visibility("default")]] void funclatency_otlp_make_sink_v1(
    const funclatency::OtlpModuleRequest& request,
    funclatency::Result<std::unique_ptr<funclatency::Sink>>& sink) {
  using namespace funclatency;
  sink = make_otlp_sink(*request.values, current_environment(),
                        detect_export_context(request.traced_pid), request.log);
}

// Checked at compile time: the entry matches the type the loader casts to.
static_assert(
    std::is_same_v<decltype(&funclatency_otlp_make_sink_v1), funclatency::OtlpModuleEntry>);
