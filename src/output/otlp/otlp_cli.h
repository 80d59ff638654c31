// The sink the --otlp options configure (in the exporter module).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "common/error.h"
#include "model/sink.h"
#include "output/otlp/otlp_cli_options.h"
#include "output/otlp/otlp_convert.h"
#include "output/otlp/otlp_options.h"
#include "output/otlp/otlp_transport.h"

namespace funclatency {

// Resolves the options (command line over OTEL_* variables) and starts the
// sink's sender thread. Bad values are kBadInput errors (exit 2). `log`
// receives the exporter's warnings (main: one line each to stderr).
Result<std::unique_ptr<Sink>> make_otlp_sink(const OtlpCliValues& values, const EnvironmentMap& env,
                                             ExportContext context, OtlpLogFunction log);

}  // namespace funclatency
