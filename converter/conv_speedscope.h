/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per process, its samples in time order, each
 * weighted by the time it stands for, so that speedscope's time-order view
 * shows when things happened. Needs the profile's timeline. */
#ifndef CONV_SPEEDSCOPE_H
#define CONV_SPEEDSCOPE_H

#include <stdio.h>

#include "conv_profile.h"

/* 0, or -1 with errno set (EINVAL: the profile has no timeline; out of
 * memory; write error). */
int conv_write_speedscope(const conv_profile *p, FILE *out);

#endif
