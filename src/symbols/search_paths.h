// Where libraries and separate debug files are looked for. The defaults are
// the dynamic loader's and the debuggers'; tests point them at their own files.
#pragma once

#include <string>
#include <vector>

namespace funclatency {

struct SearchPaths {
  std::string loader_cache = "/etc/ld.so.cache";
  std::vector<std::string> library_dirs = {"/lib/x86_64-linux-gnu",
                                           "/usr/lib/x86_64-linux-gnu",
                                           "/lib64",
                                           "/usr/lib64",
                                           "/lib",
                                           "/usr/lib"};
  // Roots of separate debug files: <root>/.build-id/xx/rest.debug and
  // <root>/<directory of the binary>/<debuglink name>.
  std::vector<std::string> debug_roots = {"/usr/lib/debug"};
};

}  // namespace funclatency
