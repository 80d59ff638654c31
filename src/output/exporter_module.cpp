#include "output/exporter_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

namespace funclatency {
namespace {

std::string own_directory() {
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return ".";
  std::string exe(path, static_cast<size_t>(length));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

}  // namespace

Result<void*> load_exporter_entry(const std::string& file, const char* entry, const char* option) {
  const std::string path = own_directory() + "/" + file;
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    const char* why = dlerror();
    return runtime_error(
        std::string("load the exporter ") + path + " that " + option +
            " needs: " + (why ? why : "unknown error"),
        0, std::string("it is built with funclatency; rebuild, or run without ") + option);
  }
  void* address = dlsym(module, entry);
  if (address == nullptr) {
    return runtime_error(path + " has no " + entry + ": a module of another build", 0,
                         "rebuild funclatency");
  }
  return address;
}

}  // namespace funclatency
