/* The text summary: a header about the recording, then the top functions by
 * self samples, like `pprof -top`. */
#ifndef CONV_SUMMARY_H
#define CONV_SUMMARY_H

#include <stdio.h>

#include "conv_profile.h"

int conv_write_summary(const conv_profile *p, size_t top, FILE *out);

#endif
