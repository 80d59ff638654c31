/* Command-line options of the small C test programs (slot-rates,
 * refused-probes): the value after NAME, if given. */
#ifndef FUNCLATENCY_TEST_PROGRAM_OPTIONS_H
#define FUNCLATENCY_TEST_PROGRAM_OPTIONS_H

#include <stddef.h>
#include <string.h>

static inline const char* text_option(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return NULL;
}

#endif
