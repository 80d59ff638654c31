// libnaming.so's functions (see naming_lib.c).
#pragma once

#include <stdint.h>

extern "C" {
uint64_t naming_lib_op(uint64_t x);
uint64_t naming_lib_unused(uint64_t x);
}
