#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>

#include "output/otlp/otlp_module.h"

namespace funclatency {
namespace {

// The folder of the running binary: the module is built and shipped next to it.
std::string own_directory() {
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return ".";
  std::string exe(path, static_cast<size_t>(length));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

}  // namespace

Result<std::unique_ptr<Sink>> load_otlp_sink(const OtlpCliValues& values, int traced_pid,
                                             std::function<void(std::string_view)> log) {
  const std::string path = own_directory() + "/" + kOtlpModuleFile;
  // Never closed: the sink's sender thread runs the module's code to the end.
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    const char* why = dlerror();
    return runtime_error("load the OTLP exporter " + path + ": " + (why ? why : "unknown error"), 0,
                         "it is built with funclatency; rebuild, or run without --otlp");
  }
  auto entry = reinterpret_cast<OtlpModuleEntry>(dlsym(module, kOtlpModuleEntry));
  if (entry == nullptr) {
    return runtime_error(path + " has no " + kOtlpModuleEntry + ": a module of another version", 0,
                         "rebuild funclatency");
  }
  Result<std::unique_ptr<Sink>> sink = runtime_error("the OTLP exporter made no sink");
  entry(OtlpModuleRequest{&values, traced_pid, std::move(log)}, sink);
  return sink;
}

}  // namespace funclatency
