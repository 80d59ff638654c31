#include "probe/code_options.h"

#include <fmt/format.h>

#include "bpf/funclatency.h"
#include "probe/bpf_object.h"

namespace funclatency {

namespace {

// x86-64 System V: RDI, RSI, RDX, RCX, R8, R9 carry the first integer arguments.
constexpr uint32_t kCArgumentRegisters = 6;

}  // namespace

CodeOptions code_options_of(const LoadOptions& load) {
  return {.cpu_split = load.cpu_split,
          .value_source = load.value_source,
          .value_index = load.value_index,
          .value_rule = load.value_rule};
}

OptionRefusal refuse_options(const CodeOptions& options, bool go) {
  if (go && options.cpu_split) {
    return {
        "--cpu-split is not defined for Go functions: a goroutine moves between threads, "
        "and the split is per thread",
        "trace Go functions without --cpu-split"};
  }
  if (!go && options.value_source == FL_VALUE_ARG && options.value_index >= kCArgumentRegisters) {
    return {fmt::format("--by arg{}: a C function's integer arguments in registers are arg0 to "
                        "arg{} (x86-64 System V); later ones are on the stack",
                        options.value_index, kCArgumentRegisters - 1),
            "split by one of the first six arguments"};
  }
  if (!go && options.value_source == FL_VALUE_RETVAL && options.value_rule == FL_RULE_GO_ERROR) {
    return {"--by retval:go-error reads a Go function's error result; this is not Go code",
            "for C, write retval:zero, retval:errno, retval:null or retval:bool"};
  }
  return {};
}

}  // namespace funclatency
