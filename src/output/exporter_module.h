// Exporters whose libraries are heavy (gRPC, protobuf, libcurl for OTLP;
// cpp-httplib and OpenSSL for Prometheus) are modules beside the binary (in
// ../lib/funclatency once installed), loaded only when their option is
// given: linked in, their ~90 shared libraries and initializers cost every
// run ~25 ms of start-up and ~11 MB of memory here, tracing or not. Each
// module exports one C-linkage entry; both sides are built from one tree, so
// its C++ types match.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "model/sink.h"

namespace funclatency {

// Where `cmake --install` (and the Debian package) puts the modules, relative
// to the folder of the binary: bin/funclatency, lib/funclatency/*.so.
inline constexpr const char* kInstalledModuleDirectory = "../lib/funclatency";

// The paths tried for the module `file`, in order, for a binary in
// `binary_directory`: next to it (the build tree), then the installed folder.
std::vector<std::string> exporter_module_paths(const std::string& binary_directory,
                                               const std::string& file);

// The address of `entry` in the module `file` (a name, looked up where
// exporter_module_paths says, from the folder of the running binary). The
// module stays loaded to the end: the sinks it makes run its code. Missing or
// broken: a runtime error naming the paths and `option`, the option that
// needs it.
Result<void*> load_exporter_entry(const std::string& file, const char* entry, const char* option);

// The same for any module of the binary (the offline commands' too): the
// errors say `needed_by` needs it, and give `missing_hint` when no path has
// it, `broken_hint` when it does not load.
Result<void*> load_module_entry(const std::string& file, const char* entry,
                                const std::string& needed_by, const std::string& missing_hint,
                                const std::string& broken_hint);

// The sink the module `file` makes: its `entry`, of type Entry, called with
// `args` and the result to fill. `exporter` names it in the error of an
// entry that filled nothing.
template <typename Entry, typename... Args>
Result<std::unique_ptr<Sink>> sink_from_module(const std::string& file, const char* entry,
                                               const char* option, const std::string& exporter,
                                               Args&&... args) {
  auto address = load_exporter_entry(file, entry, option);
  if (!address) return std::unexpected(address.error());
  Result<std::unique_ptr<Sink>> sink = runtime_error("the " + exporter + " exporter made no sink");
  reinterpret_cast<Entry> (*address)(std::forward<Args>(args)..., sink);
  return sink;
}

}  // namespace funclatency
