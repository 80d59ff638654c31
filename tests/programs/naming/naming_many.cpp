// naming-many: 250 generated functions gen_fn_000 ... gen_fn_249 for a
// pattern matching 200+ functions. Per --calls round, gen_fn_N is called
// N % 5 + 1 times; gen_fx_decoy (which 'gen_fn_*' must not match) once.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "generated_functions.h"
#include "workload_options.h"

extern "C" [[gnu::noinline]] std::uint64_t gen_fx_decoy(std::uint64_t x) {
  asm volatile("" : "+r"(x));
  return x + 1000;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(
      argc, argv, "naming-many", "--calls rounds over 250 generated functions", {.calls = 1});
  if (auto exit_code = run.early_exit()) return *exit_code;
  std::vector<funclatency::workload::FunctionTruth*> truths;
  for (const GeneratedFunction& generated : kGenerated) {
    truths.push_back(&run.add_function(generated.name));
  }
  auto& decoy = run.add_function("gen_fx_decoy");
  run.start();
  std::uint64_t checksum = 0;
  for (std::uint64_t round = 0; round < run.options().calls && run.keep_going(); ++round) {
    for (std::size_t i = 0; i < kGenerated.size(); ++i) {
      for (std::size_t k = 0; k < i % 5 + 1; ++k) {
        checksum += funclatency::workload::timed_call(
            *truths[i], [&] { return kGenerated[i].function(round + k); });
      }
    }
    checksum += funclatency::workload::timed_call(decoy, [&] { return gen_fx_decoy(round); });
  }
  std::printf("checksum %llu\n", static_cast<unsigned long long>(checksum));
  return run.finish();
}
