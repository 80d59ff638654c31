// What the OTLP resource says of the run that is not in a Report (host name,
// the traced process's executable, the tool's version), read from the system
// once when the sink is made; kept apart from otlp_convert.h so that the
// conversion reads nothing but its arguments.
#pragma once

#include "output/otlp/otlp_convert.h"

namespace funclatency {

// Host name, and the traced process's executable path when there is one.
ExportContext detect_export_context(int traced_pid);

}  // namespace funclatency
