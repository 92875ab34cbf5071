/* SPDX-License-Identifier: BSD-3-Clause */
/* A self-contained interactive flame graph: one SVG file with its script
 * inline (zoom on click, reset, search with the matched share, a tooltip
 * per frame), readable offline in any browser. Identical stack prefixes
 * are merged into a tree, drawn from its root at the top down to the
 * leaves (an icicle: the root and the start of every hot path on the first
 * screen, however deep the stacks); frames under 0.01 % of the samples are
 * left out and counted in a note. */
#ifndef CONV_SVG_H
#define CONV_SVG_H

#include "output/conv_output.h"

/* A conv_writer (conv_output.h). o->reverse puts the innermost frames at the
 * root: which callers the hot functions are reached from. */
int conv_write_svg(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err);

#endif
