// The --otlp command-line options. Light: the binary links this without the
// exporter (see otlp_module.h).
#pragma once

#include "output/otlp/otlp_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace funclatency {

// Adds --otlp [URL], --otlp-protocol, --otlp-histogram, --otlp-temporality
// and --otlp-pid-attribute. `values` must outlive parsing.
void add_otlp_options(CLI::App& app, OtlpCliValues& values);

}  // namespace funclatency
