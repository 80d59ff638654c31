// Finds an exporter module (next to the binary, or where it is installed) and
// loads its entry; see exporter_module.h.
#include "output/exporter_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include "common/own_executable.h"

namespace funclatency {
namespace {

std::string own_directory() {
  auto found = own_executable();
  if (!found) return ".";
  const std::string& exe = *found;
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

}  // namespace

std::vector<std::string> exporter_module_paths(const std::string& binary_directory,
                                               const std::string& file) {
  return {binary_directory + "/" + file,
          binary_directory + "/" + kInstalledModuleDirectory + "/" + file};
}

Result<void*> load_module_entry(const std::string& file, const char* entry,
                                const std::string& needed_by, const std::string& missing_hint,
                                const std::string& broken_hint) {
  const std::vector<std::string> candidates = exporter_module_paths(own_directory(), file);
  const std::string* path = nullptr;
  for (const auto& candidate : candidates) {
    if (access(candidate.c_str(), F_OK) == 0) {
      path = &candidate;
      break;
    }
  }
  if (path == nullptr) {
    return runtime_error("find the module " + file + " that " + needed_by + " needs: neither " +
                             candidates[0] + " nor " + candidates[1] + " exists",
                         0, missing_hint);
  }
  void* module = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    const char* why = dlerror();
    return runtime_error("load the module " + *path + " that " + needed_by +
                             " needs: " + (why ? why : "unknown error"),
                         0, broken_hint);
  }
  void* address = dlsym(module, entry);
  if (address == nullptr) {
    return runtime_error(*path + " has no " + entry + ": a module of another build", 0,
                         "install or rebuild funclatency and its modules together");
  }
  return address;
}

Result<void*> load_exporter_entry(const std::string& file, const char* entry, const char* option) {
  return load_module_entry(
      file, entry, option,
      std::string("it is installed with funclatency and built by a whole build (`cmake --build "
                  "BUILD`; the demo builds the binary alone); copy it with the binary, or run "
                  "without ") +
          option,
      std::string("a missing library comes with the package's recommended packages (apt-get "
                  "install funclatency without --no-install-recommends), or run without ") +
          option);
}

}  // namespace funclatency
