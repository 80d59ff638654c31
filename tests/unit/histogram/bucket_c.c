#include <stdint.h>

#include "bpf/funclatency.h"

uint32_t fl_bucket_of_from_c(uint64_t value) { return fl_bucket_of(value); }
uint64_t fl_bucket_low_from_c(uint32_t bucket) { return fl_bucket_low(bucket); }
