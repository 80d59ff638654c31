// Glue for main: the --otlp options and the sink they configure.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "common/error.h"
#include "output/otlp/otlp_convert.h"
#include "output/otlp/otlp_options.h"
#include "output/otlp/otlp_transport.h"
#include "output/sink.h"

namespace funclatency {

// Adds --otlp [URL], --otlp-protocol, --otlp-histogram, --otlp-temporality
// and --otlp-pid-attribute. `values` must outlive parsing.
void add_otlp_options(CLI::App& app, OtlpCliValues& values);

// Resolves the options (command line over OTEL_* variables) and starts the
// sink's sender thread. Bad values are kBadInput errors (exit 2). `log`
// receives the exporter's warnings (main: one line each to stderr).
Result<std::unique_ptr<Sink>> make_otlp_sink(const OtlpCliValues& values, const EnvironmentMap& env,
                                             ExportContext context, OtlpLogFunction log);

}  // namespace funclatency
