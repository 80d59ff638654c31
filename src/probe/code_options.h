// Options a run asks of every function that the function's language cannot
// give: the one place that says so, for the functions named at the start (the
// run is refused) and for those found later in followed programs (each is left
// out with the reason, like a function the kernel refuses).
#pragma once

#include <cstdint>
#include <string>

namespace funclatency {

// What a run asks of each function's probes, beyond timing it.
struct CodeOptions {
  bool cpu_split = false;
  uint32_t value_source = 0;  // enum fl_value_source
  uint32_t value_index = 0;
  uint32_t value_rule = 0;  // enum fl_value_rule
};

struct OptionRefusal {
  std::string reason;  // empty: every option is defined for this code
  std::string hint;
};

struct LoadOptions;
// What a loaded object's settings ask of each function.
CodeOptions code_options_of(const LoadOptions& load);

// Pure: why `options` cannot be given for Go code (`go`) or C code (not `go`).
OptionRefusal refuse_options(const CodeOptions& options, bool go);

}  // namespace funclatency
