// Rust names in both manglings. Most v0 names are real ones, from programs
// built by rustc 1.63 (Debian) and 1.95; the rest are written by hand for
// productions those programs do not use. Each expected name was checked
// against binutils' c++filt (which also prints crate hashes and const types).
#include "symbols/rust_demangle.h"

#include <gtest/gtest.h>

#include <string>

namespace funclatency {
namespace {

std::string path_of(std::string_view symbol) {
  auto name = demangle_rust(symbol);
  return name ? name->path : "(not demangled)";
}

// Each symbol's path.
void expect_paths(std::initializer_list<std::pair<std::string_view, std::string_view>> cases) {
  for (const auto& [symbol, path] : cases) EXPECT_EQ(path_of(symbol), path) << symbol;
}

// None of them demangles.
void expect_refused(std::initializer_list<std::string_view> symbols) {
  for (std::string_view symbol : symbols) EXPECT_FALSE(demangle_rust(symbol)) << symbol;
}

std::string unqualified_of(std::string_view symbol) {
  auto name = demangle_rust(symbol);
  return name ? name->unqualified : "(not demangled)";
}

TEST(RustLegacy, PathWithoutHashAndHashKeptApart) {
  auto name = demangle_rust("_ZN1m7handler7process17h6e91de04879f2b8eE");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->path, "m::handler::process");
  EXPECT_EQ(name->unqualified, "m::handler::process");
  EXPECT_EQ(name->with_hash, "m::handler::process::h6e91de04879f2b8e");
}

TEST(RustLegacy, EscapesAndPathsInsideSegments) {
  EXPECT_EQ(
      path_of("_ZN48_$LT$m..handler..S$u20$as$u20$m..handler..Tr$GT$6method17h5a09f823c779cadfE"),
      "<m::handler::S as m::handler::Tr>::method");
  expect_paths({
      {"_ZN3std9panicking19begin_panic_handler28_$u7b$$u7b$closure$u7d$$u7d$"
       "17h7ff3a0ebbf1ba422E",
       "std::panicking::begin_panic_handler::{{closure}}"},
      {"_ZN4core3ptr70drop_in_place$LT$std..panicking..begin_panic_handler.."
       "PanicPayload$GT$17h2ae01bece0f1b65cE",
       "core::ptr::drop_in_place<std::panicking::begin_panic_handler::PanicPayload>"},
      {"_ZN1m23$RF$$BP$$SP$$LP$$RP$$C$17h0123456789abcdefE", "m::&*@(),"},
      {"_ZN1m7a$u2b$b17h0123456789abcdefE", "m::a+b"},
  });
}

TEST(RustLegacy, DropsLlvmSuffixKeepsOthers) {
  auto name = demangle_rust(
      "_ZN3std3sys4unix14stack_overflow3imp14signal_handler17h4123ac683f89d11dE.llvm."
      "17321650172939032598");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->path, "std::sys::unix::stack_overflow::imp::signal_handler");
  auto data = demangle_rust("_ZN3std2io5stdio19OUTPUT_CAPTURE_USED17h39e9e3e6024dec58E.0.llvm.81");
  ASSERT_TRUE(data);
  EXPECT_EQ(data->path, "std::io::stdio::OUTPUT_CAPTURE_USED.0");
  EXPECT_EQ(data->with_hash, "std::io::stdio::OUTPUT_CAPTURE_USED::h39e9e3e6024dec58.0");
}

TEST(RustLegacy, CppAndMalformedNamesAreNotRust) {
  for (const char* symbol : {"_ZN2ns1fEv",                       // C++: parameters follow the name
                             "_ZN1m1fE",                         // no hash segment
                             "_ZN1m1f16h0123456789abcdefE",      // 15 hex digits
                             "_ZN1m1f17g0123456789abcdefE",      // not 'h'
                             "_ZN1m1f17h0123456789abcdexE",      // not hex
                             "_ZN17h0123456789abcdefE",          // a hash alone
                             "_ZN1m5a$XX$17h0123456789abcdefE",  // unknown escape
                             "_ZN1m5a$u$b17h0123456789abcdefE",  // empty code point
                             "_ZN1m8a$ud800$17h0123456789abcdefE",     // a surrogate
                             "_ZN1m10a$u110000$17h0123456789abcdefE",  // past U+10FFFF
                             "_ZN1m4a$LT17h0123456789abcdefE",         // unterminated escape
                             "_ZN1m1f17h0123456789abcdefEv",  // trailing bytes that are no suffix
                             "_ZN1m99f17h0123456789abcdefE",  // length past the end
                             "_ZN01m17h0123456789abcdefE",    // leading zero
                             "_ZN1m1f17h0123456789abcdef",    // no 'E'
                             "_ZN",
                             "malloc",
                             "",
                             "_Z",
                             "_ZN1"}) {
    EXPECT_FALSE(demangle_rust(symbol)) << symbol;
  }
}

TEST(RustV0, PlainPathsAndClosures) {
  expect_paths({
      {"_RNvNtCs6xObwDLdFGl_1m7handler7process", "m::handler::process"},
      {"_RNvCs64ewPNIWJEp_1v4main", "v::main"},
      {"_RNCNvCs64ewPNIWJEp_1v4main0B3_", "v::main::{closure#0}"},
      {"_RNCNCNCNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal00s_0B9_",
       "std::rt::lang_start_internal::{closure#0}::{closure#0}::{closure#1}"},
      {"_RNvNvCs64ewPNIWJEp_1v4main1e", "v::main::e"},
  });
  // "10__print_fmt": the '_' after the length separates it from a name that
  // starts with '_'.
  expect_paths({
      {"_RNCNvNtCsjrHSEGnQ3l9_3std5alloc8rust_oom0B5_", "std::alloc::rust_oom::{closure#0}"},
      {"_RNCNCNvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace10__print_fmts_00B9_",
       "std::sys::backtrace::_print_fmt::{closure#1}::{closure#0}"},
      {"_RNvNSC1m6vtable0", "m::{shim:vtable#0}"},
  });
}

TEST(RustV0, GenericsWithTheirArguments) {
  expect_paths({
      {"_RINvNtCs6xObwDLdFGl_1m7handler7genericyEB4_", "m::handler::generic::<u64>"},
      {"_RINvNtCs6xObwDLdFGl_1m7handler7genericReEB4_", "m::handler::generic::<&str>"},
  });
  EXPECT_EQ(unqualified_of("_RINvNtCs6xObwDLdFGl_1m7handler7genericReEB4_"), "m::handler::generic");
  expect_paths({
      {"_RINvNtCs64ewPNIWJEp_1v7handler3tuphxEB4_", "v::handler::tup::<u8, i64>"},
      {"_RINvNtCs64ewPNIWJEp_1v7handler3runNCNvB4_4mains0_0EB4_",
       "v::handler::run::<v::main::{closure#2}>"},
  });
  EXPECT_EQ(
      path_of("_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace26___rust_end_short_backtrace"
              "NCNvNtB6_5alloc8rust_oom0zEB6_"),
      "std::sys::backtrace::__rust_end_short_backtrace::<std::alloc::rust_oom::{closure#0}, !>");
  // A closure of a generic: the arguments belong to the function, not the closure.
  expect_paths({
      {"_RNCINvMs0_NtNtCsjrHSEGnQ3l9_3std4sync4onceNtB8_4Once9call_once"
       "NCNvNtBc_2rt7cleanup0E0Bc_",
       "<std::sync::once::Once>::call_once::<std::rt::cleanup::{closure#0}>::{closure#0}"},
  });
  EXPECT_EQ(unqualified_of("_RNCNvCs64ewPNIWJEp_1v4main0B3_"), "v::main::{closure#0}");
}

TEST(RustV0, ImplAndTraitPaths) {
  expect_paths({
      {"_RNvMNtCs64ewPNIWJEp_1v7handlerINtB2_1ShE3getB4_", "<v::handler::S<u8>>::get"},
      {"_RNvXs_NtCs64ewPNIWJEp_1v7handlerINtB4_1ShENtB4_2Tr6method",
       "<v::handler::S<u8> as v::handler::Tr>::method"},
  });
  EXPECT_EQ(
      path_of("_RNvYNCNvCs64ewPNIWJEp_1v4mains_0INtNtNtCs6IL9ONYDOZW_4core3ops8function6FnOnce"
              "TReEE9call_onceB6_"),
      "<v::main::{closure#1} as core::ops::function::FnOnce<(&str,)>>::call_once");
  EXPECT_EQ(
      path_of("_RNSNvYNCNvCs64ewPNIWJEp_1v4main0INtNtNtCs6IL9ONYDOZW_4core3ops8function6FnOnce"
              "TmEE9call_once6vtableB8_"),
      "<v::main::{closure#0} as core::ops::function::FnOnce<(u32,)>>::call_once::{shim:vtable#0}");
  EXPECT_EQ(
      path_of("_RINvMs4_NtCsgY6Mt91CT9J_14rustc_demangle2v0NtB6_7Printer13print_backref"
              "NCNvB2_10print_paths_0EB8_"),
      "<rustc_demangle::v0::Printer>::print_backref::<<rustc_demangle::v0::Printer>::print_path::"
      "{closure#1}>");
}

TEST(RustV0, Types) {
  expect_paths({
      {"_RINvNtCs64ewPNIWJEp_1v7handler3rawhEB4_", "v::handler::raw::<u8>"},
      {"_RINvC1m1fAhj4_E", "m::f::<[u8; 4]>"},
      {"_RINvC1m1fQL_SRL_eE", "m::f::<&mut [&str]>"},
      {"_RINvC1m1fPOhE", "m::f::<*const *mut u8>"},
      {"_RINvC1m1fTEE", "m::f::<()>"},
      {"_RINvC1m1fTuEE", "m::f::<((),)>"},
      {"_RINvC1m1fThlEE", "m::f::<(u8, i32)>"},
      {"_RINvC1m1fzvpE", "m::f::<!, ..., _>"},
      {"_RINvC1m1fL_E", "m::f::<'_>"},
  });
  EXPECT_EQ(
      path_of("_RINvC1m1fabcdefhijlmnostuxyE"),
      "m::f::<i8, bool, char, f64, str, f32, u8, isize, usize, i32, u32, i128, u128, i16, u16, "
      "(), i64, u64>");
}

TEST(RustV0, FunctionPointersAndDyn) {
  expect_paths({
      {"_RINvNtCs64ewPNIWJEp_1v7handler5fnptrFmEmEB4_", "v::handler::fnptr::<fn(u32) -> u32>"},
      {"_RINvNtCs64ewPNIWJEp_1v7handler5fnptrFG_RL0_eERL0_eEB4_",
       "v::handler::fnptr::<for<'a> fn(&'a str) -> &'a str>"},
      {"_RINvNtCs64ewPNIWJEp_1v7handler5fnptrFUKClElEB4_",
       "v::handler::fnptr::<unsafe extern \"C\" fn(i32) -> i32>"},
      {"_RINvC1m1fFKCEuE", "m::f::<extern \"C\" fn()>"},
      {"_RINvC1m1fFK8C_unwindEuE", "m::f::<extern \"C-unwind\" fn()>"},
      {"_RNvXs1g_NtCsgEmfK2I1SDS_4core3fmtRDNtB6_5DebugEL_Bx_3fmtB8_",
       "<&dyn core::fmt::Debug as core::fmt::Debug>::fmt"},
      {"_RINvC1m1fDNtC1m4Iterp4ItemhEL_E", "m::f::<dyn m::Iter<Item = u8>>"},
      {"_RINvC1m1fDINtC1m2FnTmEEp6OutputuEL_E", "m::f::<dyn m::Fn<(u32,), Output = ()>>"},
      {"_RINvC1m1fFG_DNtC1m1TEL0_EuE", "m::f::<for<'a> fn(dyn m::T + 'a)>"},
  });
}

TEST(RustV0, ConstGenerics) {
  expect_paths({
      {"_RINvNtCs6xObwDLdFGl_1m7handler5konstKj3_EB4_", "m::handler::konst::<3>"},
      {"_RINvNtCs64ewPNIWJEp_1v7handler4knegKln5_EB4_", "v::handler::kneg::<-5>"},
      {"_RINvNtCs64ewPNIWJEp_1v7handler5kboolKb1_EB4_", "v::handler::kbool::<true>"},
      {"_RINvNtCs64ewPNIWJEp_1v7handler5kcharKc78_EB4_", "v::handler::kchar::<'x'>"},
      {"_RINvC1m1fKc27_E", "m::f::<'\\''>"},
      {"_RINvC1m1fKca_E", "m::f::<'\\u{a}'>"},
      {"_RINvC1m1fKce9_E", "m::f::<'\xc3\xa9'>"},
      {"_RINvC1m1fKo123456789abcdef0123_E", "m::f::<0x123456789abcdef0123>"},
      {"_RINvC1m1fKpE", "m::f::<_>"},
      {"_RINvC1m1fKb0_E", "m::f::<false>"},
  });
  expect_refused({
      "_RINvC1m1fKb2_E",     // a bool that is neither
      "_RINvC1m1fKjn3_E",    // a negative usize
      "_RINvC1m1fKcd800_E",  // a surrogate char
      "_RINvC1m1fKe3_E",     // a const str
  });
}

TEST(RustV0, PunycodeIdentifiers) {
  expect_paths({
      {"_RNvNtCs64ewPNIWJEp_1v7handleru11rpondre_bya", "v::handler::r\xc3\xa9pondre"},
  });
  // RFC 3492's own sample (Arabic, "u" + its length), deltas only.
  EXPECT_EQ(
      path_of("_RNvC1mu22egbpdaj6bu4bxfgehfvwxn"),
      "m::\xd9\x84\xd9\x8a\xd9\x87\xd9\x85\xd8\xa7\xd8\xa8\xd8\xaa\xd9\x83\xd9\x84\xd9\x85\xd9\x88"
      "\xd8\xb4\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\x9f");
  expect_refused({
      "_RNvC1mu3a_!",       // not a punycode digit
      "_RNvC1mu3a_z",       // deltas end mid-number
      "_RNvC1mu8a_99999a",  // U+245220: past U+10FFFF
  });
}

TEST(RustV0, SuffixesAndInstantiatingCrate) {
  expect_paths({
      {"_RNCINvNtCsdyIG5SqMl5y_3std2rt10lang_startuE0Cs64ewPNIWJEp_1v.llvm."
       "17214927547902214673",
       "std::rt::lang_start::<()>::{closure#0}"},
      {"_RNvC1m1f.cold", "m::f.cold"},
  });
  expect_refused({
      "_RNvC1m1fx",  // trailing bytes that are no suffix
      "_R0NvC1m1f",  // an encoding version: none exists
  });
}

TEST(RustV0, MalformedNamesAreRefused) {
  for (const char* symbol : {"_R",
                             "_RN",
                             "_RNv",
                             "_RNvC",
                             "_RNvC1",
                             "_RNvC1m",
                             "_RC9m",
                             "_RNvNvC1m4main1_",
                             "_RNvB0_1f",         // a backreference to the middle of a production
                             "_RNvB_1f",          // one that leads back to itself
                             "_RNvB9_1f",         // one that points forward
                             "_RINvC1m1fTE",      // the generic arguments never end
                             "_RINvC1m1fRL1_hE",  // a lifetime no binder introduced
                             "_RINvC1m1fGzzzzzzzzzz_FEuE",  // a binder of too many lifetimes
                             "_RNvC1m1f\xff",
                             "_RINvC1m1fK",
                             "_RINvC1m1fKj",
                             "_RINvC1m1fKjg_E",
                             "_RMC1m",
                             "_RXC1m",
                             "_RNvCzzzzzzzzzzzzzzzzzzzzzzz_1m1f",
                             "_RNvC99999999999999999999999m",
                             "_RNvC18446744073709551616m"}) {
    EXPECT_FALSE(demangle_rust(symbol)) << symbol;
  }
}

// Base 62 as backreferences write it: "_" is 0, "<digits>_" is digits + 1.
std::string backref_to(size_t position) {
  if (position == 0) return "B_";
  static constexpr char kDigits[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string digits;
  for (size_t n = position - 1;; n /= 62) {
    digits.insert(digits.begin(), kDigits[n % 62]);
    if (n < 62) break;
  }
  return "B" + digits + "_";
}

// "m::f::<T>" where T is a tuple of two u8s and each of `levels` more
// tuples holds the one before it twice, through backreferences.
std::string doubling_tuples(int levels) {
  std::string text = "_RINvC1m1fThhE";
  size_t previous = 8;  // the first tuple, past "_R"
  for (int level = 0; level < levels; ++level) {
    const size_t here = text.size() - 2;
    text += "T" + backref_to(previous) + backref_to(previous) + "E";
    previous = here;
  }
  return text + "E";
}

TEST(RustV0, BackreferencesThatDoubleTheOutputAreBounded) {
  EXPECT_EQ(path_of(doubling_tuples(2)),
            "m::f::<(u8, u8), ((u8, u8), (u8, u8)), (((u8, u8), (u8, u8)), ((u8, u8), (u8, u8)))>");
  // 64 levels would print 2^64 u8s.
  EXPECT_FALSE(demangle_rust(doubling_tuples(64)));
}

TEST(RustV0, DeepNestingIsBounded) {
  std::string deep = "_RINvC1m1f";
  for (int i = 0; i < 5000; ++i) deep += "S";
  deep += "hE";
  EXPECT_FALSE(demangle_rust(deep));
  std::string shallow = "_RINvC1m1f";
  for (int i = 0; i < 50; ++i) shallow += "S";
  shallow += "hE";
  EXPECT_TRUE(demangle_rust(shallow));
}

TEST(Rust, OtherNamesAreNotRust) {
  for (const char* symbol : {"main", "_ZN2ns5Class6methodEi", "_Z3fooi", "slow_op", "R", "_"}) {
    EXPECT_FALSE(demangle_rust(symbol)) << symbol;
  }
}

}  // namespace
}  // namespace funclatency
