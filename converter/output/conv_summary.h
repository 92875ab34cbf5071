/* SPDX-License-Identifier: BSD-3-Clause */
/* The text summary: a header about the recording, then the top functions by
 * self samples, like `pprof -top`. */
#ifndef CONV_SUMMARY_H
#define CONV_SUMMARY_H

#include "output/conv_output.h"

/* A conv_writer (conv_output.h): o->top rows a table. */
int conv_write_summary(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err);

#endif
