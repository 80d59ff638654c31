// The export context from the system (see export_context.h): gethostname()
// and /proc/PID/exe.
#include "output/otlp/export_context.h"

#include <limits.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace funclatency {

ExportContext detect_export_context(int traced_pid) {
  ExportContext context;
  context.traced_pid = traced_pid;
  context.tool_version = FUNCLATENCY_VERSION;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) context.host_name = host;
  if (traced_pid > 0) {
    std::error_code error;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(traced_pid) + "/exe", error);
    if (!error) context.traced_executable = exe.string();
  }
  return context;
}

}  // namespace funclatency
