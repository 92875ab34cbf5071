/* SPDX-License-Identifier: BSD-3-Clause */
/* The load lane: each process's packets a second, lag and socket queue,
 * second by second (LOAD records, format 8), for the flame graph's strip
 * above the frames. Only collected when an output asks for it; the cache
 * never stores it. */
#ifndef CONV_LANE_H
#define CONV_LANE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct conv_lane_point {
    int64_t t_ns; /* unix time the second ended */
    uint32_t pid;
    uint8_t has_rates, has_lag, has_queue, selected; /* selected: --when kept it */
    uint8_t has_counters, live, af_packet;
    double pps, lag_s, queue_bytes;
    uint64_t received, dropped; /* the source's counters (has_counters) */
} conv_lane_point;

typedef struct conv_lane {
    conv_lane_point *p; /* by process, then time */
    size_t n, cap;
} conv_lane;

/* 0, or -1 when out of memory. */
int conv_lane_add(conv_lane *l, const conv_lane_point *pt);
/* Moves src's points into dst (src is left empty); 0 or -1. */
int conv_lane_merge(conv_lane *dst, conv_lane *src);
void conv_lane_free(conv_lane *l);

/* Describes each process's seconds: its source, packets, drops, lag and
 * queue, and its busiest and laggiest seconds (times from start_ns), a
 * line each, indented by indent. */
void conv_lane_describe(FILE *out, const conv_lane *l, int64_t start_ns, const char *indent);

#endif
