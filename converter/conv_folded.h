/* Folded stacks: one "outer;...;inner COUNT" line per stack, the input of
 * flamegraph.pl, inferno and speedscope. */
#ifndef CONV_FOLDED_H
#define CONV_FOLDED_H

#include <stdio.h>

#include "conv_profile.h"
#include "zs_error.h"

int conv_write_folded(const conv_profile *p, FILE *out);

#endif
