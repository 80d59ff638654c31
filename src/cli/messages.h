// The lines funclatency writes to stderr while it runs: notes always,
// details only with -v.
#pragma once

#include <cstdio>
#include <string>

namespace funclatency {

struct Messages {
  bool verbose = false;

  void note(const std::string& line) const {
    std::fprintf(stderr, "funclatency: %s\n", line.c_str());
  }
  void detail(const std::string& line) const {
    if (verbose) note(line);
  }
};

}  // namespace funclatency
