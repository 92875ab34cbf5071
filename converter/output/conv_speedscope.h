/* SPDX-License-Identifier: BSD-3-Clause */
/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per process, its samples in time order, each
 * weighted by the time it stands for, so that speedscope's time-order view
 * shows when things happened. Needs the profile's timeline. */
#ifndef CONV_SPEEDSCOPE_H
#define CONV_SPEEDSCOPE_H

#include "output/conv_output.h"

/* A conv_writer (conv_output.h). Fails on a profile without a timeline. */
int conv_write_speedscope(const conv_profile *p, const conv_write_options *o, FILE *out,
                          zs_error *err);

#endif
