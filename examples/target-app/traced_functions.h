// The functions of target-app meant to be traced, by symbol name. They are
// extern "C" (plain names) and never inlined, so each call is a real call.
#pragma once

#include <cstdint>

extern "C" {
// Sleeps `sleep_ns` (tail busy-waited, so the duration is tight); returns it.
std::uint64_t slow_op(std::uint64_t sleep_ns);
// A few hundred nanoseconds of arithmetic.
std::uint64_t fast_op(std::uint64_t seed);
// Built with -fcf-protection=branch, so its first instruction is endbr64
// (the expensive single-stepped case for uprobes).
std::uint64_t cet_op(std::uint64_t seed);
}
