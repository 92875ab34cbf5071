/* SPDX-License-Identifier: BSD-3-Clause */
/* The flame graph's load lane: under the legend, a strip a row each for
 * packets a second, lag and the socket queue (those the recording has),
 * one line per process over the recording's seconds, the seconds --when
 * selected shaded. */
#ifndef CONV_SVG_LANE_H
#define CONV_SVG_LANE_H

#include <stdio.h>

#include "profile/conv_lane.h"

/* Its height in px; 0 when there is nothing to draw (no lane, no point). */
int conv_svg_lane_height(const conv_lane *lane);
/* Draws it from y down, across [x0, x1). when: --when's text, or NULL. */
void conv_svg_lane_draw(FILE *out, const conv_lane *lane, int y, int x0, int x1, const char *when);

#endif
