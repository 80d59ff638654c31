// The 250 functions CMakeLists.txt generates for naming-many.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

struct GeneratedFunction {
  const char* name;
  std::uint64_t (*function)(std::uint64_t);
};

inline constexpr std::size_t kGeneratedFunctions = 250;
extern const std::array<GeneratedFunction, kGeneratedFunctions> kGenerated;
