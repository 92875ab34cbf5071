/* SPDX-License-Identifier: BSD-3-Clause */
/* A process's load, second by second, from its LOAD records (format 8):
 * what one second looked like (packets and drops a second, lag, queue),
 * and which seconds were the busiest and the laggiest. */
#ifndef CONV_LOAD_H
#define CONV_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"

/* One second of a process, as the LOAD record that closed it says:
 * rates over the span since the record before it. */
typedef struct conv_load_second {
    uint64_t t_us;   /* the record's time */
    int has_rates;   /* pps, bytes_per_s and drops_per_s (counters in it and the one before) */
    double pps, bytes_per_s, drops_per_s;
    int has_lag;
    double lag_s;
    int has_queue;
    double queue_bytes;
    int live;
} conv_load_second;

/* The second holding t_us: the first record at or after it, with the one
 * before for the rates. 0 when no record is there (after the last one). */
int conv_load_second_at(const zs_load *points, size_t n, uint64_t t_us, conv_load_second *out);
/* The second that record i closed (i < n). */
void conv_load_second_of(const zs_load *points, size_t n, size_t i, conv_load_second *out);

#endif
