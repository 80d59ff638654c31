// --by retval[:RULE] / argN[:BUCKETS]: the spellings the command line takes
// (and refuses), the class fl_value_of gives a register under each rule (the
// same code the probes run), and the label every output shows for a class.
#include "collect/value_series.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace funclatency {
namespace {

ValueSeries parsed(std::string_view key) {
  auto spec = parse_value_key(key);
  EXPECT_TRUE(spec.has_value()) << key << ": " << (spec ? "" : spec.error().message());
  return spec.value_or(ValueSeries{});
}

TEST(ValueSeries, ParsesRetvalRules) {
  EXPECT_EQ(parsed("retval"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_ZERO}));
  EXPECT_EQ(parsed("retval:zero"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_ZERO}));
  EXPECT_EQ(parsed("retval:errno"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_ERRNO}));
  EXPECT_EQ(parsed("retval:null"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_NULL}));
  EXPECT_EQ(parsed("retval:bool"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_BOOL}));
  EXPECT_EQ(parsed("retval:raw"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_RAW32}));
  EXPECT_EQ(parsed("retval:raw64"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_RAW64}));
  EXPECT_EQ(parsed("retval:go-error"), (ValueSeries{FL_VALUE_RETVAL, 0, FL_RULE_GO_ERROR}));
  EXPECT_EQ(parsed("retval:go-error:2"), (ValueSeries{FL_VALUE_RETVAL, 2, FL_RULE_GO_ERROR}));
}

TEST(ValueSeries, ParsesArguments) {
  EXPECT_EQ(parsed("arg0"), (ValueSeries{FL_VALUE_ARG, 0, FL_RULE_LOG2}));
  EXPECT_EQ(parsed("arg1:log2"), (ValueSeries{FL_VALUE_ARG, 1, FL_RULE_LOG2}));
  EXPECT_EQ(parsed("arg5:raw"), (ValueSeries{FL_VALUE_ARG, 5, FL_RULE_RAW64}));
  EXPECT_EQ(parsed("arg8:raw32"), (ValueSeries{FL_VALUE_ARG, 8, FL_RULE_RAW32}));
}

TEST(ValueSeries, RefusesWhatItCannotRead) {
  for (std::string_view key : {"retval:", "retval:maybe", "retval:go-error:9", "retval:go-error:x",
                               "arg", "arg9", "arg-1", "arg1:log10", "argx", "args"}) {
    auto spec = parse_value_key(key);
    ASSERT_FALSE(spec.has_value()) << key;
    EXPECT_EQ(spec.error().kind, ErrorKind::kBadInput) << key;
    EXPECT_NE(spec.error().message().find(std::string(key)), std::string::npos)
        << spec.error().message();
  }
  EXPECT_TRUE(is_value_key("retval:errno"));
  EXPECT_TRUE(is_value_key("arg2"));
  EXPECT_FALSE(is_value_key("pid"));
  EXPECT_FALSE(is_value_key("retvalue") && parse_value_key("retvalue").has_value());
}

// A register as an int-returning function leaves it: the upper half is not
// the int's (here garbage), so the int rules read the lower 32 bits.
constexpr uint64_t kGarbage = 0xdead'beef'0000'0000ull;

TEST(ValueSeries, ClassifiesLikeTheProbes) {
  EXPECT_EQ(fl_value_of(FL_RULE_ZERO, kGarbage), 0u);
  EXPECT_EQ(fl_value_of(FL_RULE_ZERO, kGarbage | 5), 1u);
  EXPECT_EQ(fl_value_of(FL_RULE_ERRNO, kGarbage | 512), 0u);
  EXPECT_EQ(fl_value_of(FL_RULE_ERRNO, kGarbage | static_cast<uint32_t>(-EAGAIN)),
            static_cast<uint64_t>(-EAGAIN));
  EXPECT_EQ(fl_value_of(FL_RULE_ERRNO, static_cast<uint64_t>(-EIO)), static_cast<uint64_t>(-EIO));
  EXPECT_EQ(fl_value_of(FL_RULE_NULL, 0), 0u);
  EXPECT_EQ(fl_value_of(FL_RULE_NULL, 1ull << 40), 1u);  // a pointer: all 64 bits
  EXPECT_EQ(fl_value_of(FL_RULE_BOOL, kGarbage | 0x100), 0u);
  EXPECT_EQ(fl_value_of(FL_RULE_BOOL, kGarbage | 1), 1u);
  EXPECT_EQ(fl_value_of(FL_RULE_RAW32, kGarbage | 0xffffffffu), static_cast<uint64_t>(-1));
  EXPECT_EQ(fl_value_of(FL_RULE_RAW64, kGarbage | 7), kGarbage | 7);
  EXPECT_EQ(fl_value_of(FL_RULE_GO_ERROR, 0), 0u);
  EXPECT_EQ(fl_value_of(FL_RULE_GO_ERROR, 0x4a5b60), 1u);
  EXPECT_EQ(fl_value_of(FL_RULE_LOG2, 0), 0u);
  EXPECT_EQ(fl_value_of(FL_RULE_LOG2, 1), 1u);
  EXPECT_EQ(fl_value_of(FL_RULE_LOG2, 64), 7u);
  EXPECT_EQ(fl_value_of(FL_RULE_LOG2, 127), 7u);
  EXPECT_EQ(fl_value_of(FL_RULE_LOG2, 128), 8u);
  EXPECT_EQ(fl_value_of(FL_RULE_LOG2, UINT64_MAX), 64u);
}

TEST(ValueSeries, LabelsEachClass) {
  const auto label = [](std::string_view key, uint64_t raw) {
    const ValueSeries spec = parsed(key);
    return value_label(spec, fl_value_of(spec.rule, raw));
  };
  EXPECT_EQ(label("retval", 0), "ok");
  EXPECT_EQ(label("retval", 5), "error");
  EXPECT_EQ(label("retval:errno", 512), "ok");
  EXPECT_EQ(label("retval:errno", static_cast<uint64_t>(-EAGAIN)), "-EAGAIN");
  EXPECT_EQ(label("retval:errno", static_cast<uint32_t>(-ENOENT)), "-ENOENT");
  EXPECT_EQ(label("retval:errno", static_cast<uint64_t>(-100000)), "-100000");  // no errno
  EXPECT_EQ(label("retval:null", 0), "null");
  EXPECT_EQ(label("retval:null", 0x7fff0000), "ok");
  EXPECT_EQ(label("retval:bool", 1), "true");
  EXPECT_EQ(label("retval:bool", 0), "false");
  EXPECT_EQ(label("retval:raw", 0xffffffffu), "-1");
  EXPECT_EQ(label("retval:raw64", 1ull << 40), "1099511627776");
  EXPECT_EQ(label("retval:go-error:1", 0), "ok");
  EXPECT_EQ(label("retval:go-error:1", 0x4a5b60), "error");
  EXPECT_EQ(label("arg1", 0), "[0, 1)");
  EXPECT_EQ(label("arg1", 1), "[1, 2)");
  EXPECT_EQ(label("arg1", 100), "[64, 128)");
  EXPECT_EQ(label("arg1", UINT64_MAX), "[9223372036854775808, 18446744073709551616)");
  EXPECT_EQ(label("arg0:raw", static_cast<uint64_t>(-3)), "-3");
  EXPECT_EQ(value_label_name(parsed("arg3")), "arg");
  EXPECT_EQ(value_label_name(parsed("retval:errno")), "retval");
}

}  // namespace
}  // namespace funclatency
