/* SPDX-License-Identifier: BSD-3-Clause */
/* Folded stacks: one "outer;...;inner COUNT" line per stack, the input of
 * flamegraph.pl, inferno and speedscope. */
#ifndef CONV_FOLDED_H
#define CONV_FOLDED_H

#include "output/conv_output.h"

/* A conv_writer (conv_output.h). */
int conv_write_folded(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err);

#endif
