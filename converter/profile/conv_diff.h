/* SPDX-License-Identifier: BSD-3-Clause */
/* Differential profiles (zeek-spy-convert --base OLD NEW): how each
 * function's share of its profile's samples moved from the base to the new
 * profile, functions matched by name, file and line (the processes and
 * addresses may differ: another run, another host, another node). Shares,
 * not counts, so profiles of different lengths compare. */
#ifndef CONV_DIFF_H
#define CONV_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "profile/conv_profile.h"
#include "profile/conv_tree.h"

typedef struct conv_diff_row {
    const conv_function *function; /* the new profile's, else the base's */
    double flat_base, flat_new;    /* percent of each profile's samples */
    double cum_base, cum_new;
} conv_diff_row;

/* A row for every function of either profile, the largest change of the
 * flat share first (then of the cum share). 0, or -1 on no memory. */
int conv_diff_rows(const conv_profile *base, const conv_profile *cur, conv_diff_row **rows,
                   size_t *n);

/* For each node of t, the tree of cur built with reverse: the base's
 * samples on the same call path (by function), in out[node] (0 where the
 * base never went). 0, or -1 on no memory. */
int conv_diff_path_samples(const conv_profile *base, const conv_profile *cur, const conv_tree *t,
                           int reverse, uint64_t *out);

#endif
