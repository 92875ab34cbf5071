/* SPDX-License-Identifier: BSD-3-Clause */
/* --when: samples kept by the load of the second they were taken in, e.g.
 * "lag > 1s", "pps >= 50000 and queue > 1M", "drops > 0". A metric the
 * recording does not have for that second keeps no sample. */
#ifndef CONV_WHEN_H
#define CONV_WHEN_H

#include <stddef.h>

#include "read/conv_load.h"
#include "zs_error.h"

typedef enum conv_when_metric {
    CONV_WHEN_PPS,   /* packets received a second */
    CONV_WHEN_DROPS, /* packets dropped a second */
    CONV_WHEN_LAG,   /* seconds network_time is behind the wall clock (live) */
    CONV_WHEN_QUEUE, /* bytes waiting in zeek's packet sockets */
} conv_when_metric;

typedef enum conv_when_op { CONV_WHEN_GT, CONV_WHEN_GE, CONV_WHEN_LT, CONV_WHEN_LE } conv_when_op;

enum { CONV_WHEN_MAX = 8 };

typedef struct conv_when {
    struct {
        conv_when_metric metric;
        conv_when_op op;
        double value;
    } cond[CONV_WHEN_MAX];
    size_t n; /* 0: no --when */
    char text[256];
} conv_when;

/* Conditions joined by "and": METRIC OP NUMBER[UNIT], METRIC one of pps,
 * drops, lag (units s, ms; seconds without), queue (units K, M, G; bytes
 * without), OP one of > >= < <=. opt names the option in errors. */
int conv_when_parse(const char *opt, const char *text, conv_when *w, zs_error *err);
/* Whether the second s meets every condition. */
int conv_when_keeps(const conv_when *w, const conv_load_second *s);

#endif
