/* SPDX-License-Identifier: BSD-3-Clause */
/* The one way a profile is written out, whatever the format. Output files
 * are written to a temporary file beside the target and renamed into place,
 * so a reader never sees half a profile and an interrupted converter leaves
 * the previous output intact. */
#ifndef CONV_OUTPUT_H
#define CONV_OUTPUT_H

#include <stdio.h>

#include "profile/conv_profile.h"
#include "zs_error.h"

/* What some output formats can be asked for; the others ignore it. */
typedef struct conv_write_options {
    size_t top;  /* summary: rows of each table, 0 = all */
    int reverse; /* svg: innermost frames at the root */
    const conv_profile *base; /* --base: summary and svg against it (profile/conv_diff.h) */
    const char *when;         /* --when's text (svg: its seconds shaded in the lane), or NULL */
} conv_write_options;

/* Every output format has this shape: it writes all of p to out, and on
 * failure returns -1 with err's detail saying what failed but not where,
 * since only the caller knows the output's name. */
typedef int conv_writer(const conv_profile *p, const conv_write_options *o, FILE *out,
                        zs_error *err);

/* Writes p to path ("-" is stdout) with write, through a temporary file
 * renamed into place; the error names path. 0 or -1. */
int conv_output_write(const char *path, conv_writer *write, const conv_profile *p,
                      const conv_write_options *o, zs_error *err);

/* For writers on stdio: the failure errno says (a write error, or ENOMEM)
 * as err. Returns -1. */
int conv_output_errno(zs_error *err);

#endif
