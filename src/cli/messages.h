// The lines funclatency writes to stderr while it runs: notes always,
// details only with -v.
#pragma once

#include <concepts>
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
  // A detail that costs something to write (a read of /proc, say): made
  // only with -v.
  template <std::invocable Make>
  void detail(const Make& make) const {
    if (verbose) note(make());
  }
};

}  // namespace funclatency
