// The command line read into raw values: funclatency's own options
// (config.cpp), the exporters' and the privilege options, with --help,
// --version and parse errors answered here. The binary's one unit that
// instantiates CLI11, which costs ~9 CPU-s a unit to compile
// (src/cli/CMakeLists.txt); main.cpp sees plain structs.
#pragma once

#include <expected>

#include "cli/config.h"
#include "cli/privileges.h"
#include "output/otlp/otlp_options.h"
#include "output/prometheus/prometheus_cli.h"

namespace funclatency {

struct Arguments {
  CommandLine core;
  PrometheusCliValues prometheus;
  OtlpCliValues otlp;
  PrivilegeCliValues privileges;
};

// The values given; or, once help or the version is printed or a parse error
// said, the exit code (0 or 2).
std::expected<Arguments, int> parse_command_line(int argc, char** argv);

}  // namespace funclatency
