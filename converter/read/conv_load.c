/* SPDX-License-Identifier: BSD-3-Clause */
#include "read/conv_load.h"

#include <string.h>

void conv_load_second_of(const zs_load *points, size_t n, size_t i, conv_load_second *out)
{
    const zs_load *p = &points[i];
    memset(out, 0, sizeof *out);
    (void)n;
    out->t_us = p->t_us;
    out->live = (p->what & ZS_LOAD_LIVE) != 0;
    if (p->what & ZS_LOAD_LAG) {
        out->has_lag = 1;
        out->lag_s = (double)p->lag_us / 1e6;
    }
    if (p->what & ZS_LOAD_QUEUE) {
        out->has_queue = 1;
        out->queue_bytes = (double)p->queue;
    }
    const zs_load *q = i > 0 ? &points[i - 1] : NULL;
    /* Counters that went back belong to a source opened anew: no rate. */
    if (q && (p->what & q->what & ZS_LOAD_COUNTERS) && p->t_us > q->t_us && p->received >= q->received &&
        p->bytes >= q->bytes && p->dropped >= q->dropped) {
        double span = (double)(p->t_us - q->t_us) / 1e6;
        out->has_rates = 1;
        out->pps = (double)(p->received - q->received) / span;
        out->bytes_per_s = (double)(p->bytes - q->bytes) / span;
        out->drops_per_s = (double)(p->dropped - q->dropped) / span;
    }
}

int conv_load_second_at(const zs_load *points, size_t n, uint64_t t_us, conv_load_second *out)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first record at or after t_us */
        size_t mid = lo + (hi - lo) / 2;
        if (points[mid].t_us < t_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n)
        return 0;
    conv_load_second_of(points, n, lo, out);
    return 1;
}
