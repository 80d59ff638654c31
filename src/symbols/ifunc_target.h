// Where an IFUNC really goes. An STT_GNU_IFUNC symbol's address is a
// resolver that runs once at load time and picks an implementation for the
// CPU (strlen -> __strlen_avx2); a probe on the resolver never fires for calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace funclatency {

// The implementation address (as a virtual address of the library file)
// that calls to the IFUNC `name` of the library at `library_path` reach, when
// that library is already loaded in this process: the dynamic loader runs
// the resolver for us, and on the same machine it picks what the traced
// process picked. Nothing for libraries this process has not loaded.
std::optional<uint64_t> ifunc_target(const std::string& library_path, const std::string& name);

}  // namespace funclatency
