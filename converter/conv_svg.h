/* A self-contained interactive flame graph: one SVG file with its script
 * inline (zoom on click, reset, search with the matched share, a tooltip
 * per frame), readable offline in any browser. Identical stack prefixes
 * are merged into a tree; frames under 0.01 % of the samples are left out
 * and counted in a note. */
#ifndef CONV_SVG_H
#define CONV_SVG_H

#include <stdio.h>

#include "conv_profile.h"

typedef struct conv_svg_options {
    /* Innermost frames at the root, drawn top-down (an icicle): which
     * callers the hot functions are reached from. */
    int reverse;
} conv_svg_options;

/* 0, or -1 with errno set (out of memory, write error). */
int conv_write_svg(const conv_profile *p, const conv_svg_options *o, FILE *out);

#endif
