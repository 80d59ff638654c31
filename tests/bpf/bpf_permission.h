// Whether this process may load BPF and attach uprobes, and what a test does
// when it may not: skip with the reason, or fail when FUNCLATENCY_REQUIRE_BPF=1
// (set by CI) says BPF must be there.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace funclatency::testing {

// Empty when BPF uprobes can be used here, else why not.
std::string bpf_unavailable_reason();

// FUNCLATENCY_REQUIRE_BPF=1: a test that needs BPF fails instead of skipping.
bool bpf_required();

}  // namespace funclatency::testing

// In a test body or SetUp(): skips (or fails) the test when BPF is not permitted.
#define FL_SKIP_WITHOUT_BPF()                                                                   \
  do {                                                                                          \
    if (const std::string fl_reason = ::funclatency::testing::bpf_unavailable_reason();         \
        !fl_reason.empty()) {                                                                   \
      if (::funclatency::testing::bpf_required())                                               \
        FAIL() << "BPF is required (FUNCLATENCY_REQUIRE_BPF=1) but unavailable: " << fl_reason; \
      GTEST_SKIP() << "BPF not permitted: " << fl_reason;                                       \
    }                                                                                           \
  } while (0)
