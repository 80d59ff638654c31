// The export context read from this very process: the one part of the OTLP
// resource that is not a pure function of the report.
#include "output/otlp/export_context.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace funclatency {
namespace {

TEST(ExportContext, DetectsHostAndOwnProcess) {
  auto context = detect_export_context(getpid());
  EXPECT_FALSE(context.host_name.empty());
  EXPECT_NE(context.traced_executable.find("otlp_unit_tests"), std::string::npos);
  EXPECT_FALSE(context.tool_version.empty());
  EXPECT_TRUE(detect_export_context(0).traced_executable.empty());
}

}  // namespace
}  // namespace funclatency
