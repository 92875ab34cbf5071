/* SPDX-License-Identifier: BSD-3-Clause */
/* The pprof output: the aggregated profile as a gzipped profile.proto that
 * `go tool pprof` and other pprof clients read. */
#ifndef CONV_PPROF_H
#define CONV_PPROF_H

#include "output/conv_output.h"

/* A conv_writer (conv_output.h). */
int conv_write_pprof(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err);

#endif
