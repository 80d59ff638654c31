// naming-app (PIE), naming-app-nopie and naming-app-stripped: per --calls
// round, one call each of its own app_local_op(), libnaming.so's
// naming_lib_op() and libc's getppid() and l64a(), so the tests can name the
// same calls as BINARY:FUNCTION, lib:FUNCTION and :FUNCTION and expect exact
// counts. Nothing else in the program calls getppid() or l64a().
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "naming_lib.h"
#include "workload_options.h"

extern "C" [[gnu::noinline]] std::uint64_t app_local_op(std::uint64_t x) {
  asm volatile("" : "+r"(x));
  return x * 31 + 7;
}

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(
      argc, argv, "naming-app",
      "--calls rounds of app_local_op(), naming_lib_op(), getppid() and l64a()", {.calls = 200});
  if (auto exit_code = run.early_exit()) return *exit_code;
  auto& local = run.add_function("app_local_op");
  auto& library = run.add_function("naming_lib_op");
  auto& parent = run.add_function("getppid");
  auto& radix = run.add_function("l64a");
  run.start();
  std::uint64_t checksum = 0;
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    checksum += funclatency::workload::timed_call(local, [&] { return app_local_op(i); });
    checksum += funclatency::workload::timed_call(library, [&] { return naming_lib_op(i); });
    checksum += funclatency::workload::timed_call(parent, [] { return getppid(); });
    checksum +=
        funclatency::workload::timed_call(radix, [&] { return l64a(static_cast<long>(i + 1))[0]; });
  }
  std::printf("checksum %llu\n", static_cast<unsigned long long>(checksum));
  return run.finish();
}
