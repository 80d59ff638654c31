// The export context read from this very process: the one part of the OTLP
// resource that is not a pure function of the report.
#include "output/otlp/export_context.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

namespace funclatency {
namespace {

TEST(ExportContext, DetectsHostAndOwnProcess) {
  auto context = detect_export_context(getpid());
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(gethostname(host, sizeof host), 0);
  ASSERT_NE(host[0], '\0');
  EXPECT_EQ(context.host_name, host);
  char executable[PATH_MAX] = {};
  ASSERT_GT(readlink("/proc/self/exe", executable, sizeof executable - 1), 0);
  EXPECT_EQ(context.traced_executable, executable);
  EXPECT_NE(context.traced_executable.find("otlp_unit_tests"), std::string::npos);
  EXPECT_FALSE(context.tool_version.empty());
  EXPECT_TRUE(detect_export_context(0).traced_executable.empty());
}

}  // namespace
}  // namespace funclatency
