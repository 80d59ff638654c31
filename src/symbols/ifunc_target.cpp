#include "symbols/ifunc_target.h"

#include <dlfcn.h>
#include <link.h>

namespace funclatency {

std::optional<uint64_t> ifunc_target(const std::string& library_path, const std::string& name) {
  // RTLD_NOLOAD: never let a library's constructors run in the tool itself. The
  // loader matches an already loaded object by file identity, not by path.
  void* handle = dlopen(library_path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return std::nullopt;
  std::optional<uint64_t> target;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) {
    // dlsym on an IFUNC returns what its resolver selected.
    if (void* implementation = dlsym(handle, name.c_str())) {
      const auto runtime = reinterpret_cast<uint64_t>(implementation);
      if (runtime >= map->l_addr) target = runtime - map->l_addr;
    }
  }
  dlclose(handle);
  return target;
}

}  // namespace funclatency
