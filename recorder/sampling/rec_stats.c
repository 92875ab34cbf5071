/* SPDX-License-Identifier: BSD-3-Clause */
#include "sampling/rec_stats.h"

void rec_hist_add(rec_hist *h, uint64_t ns)
{
    uint64_t us = ns / 1000;
    h->us[us < REC_HIST_BUCKETS ? us : REC_HIST_BUCKETS - 1]++;
    h->count++;
    h->total_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

double rec_hist_quantile_us(const rec_hist *h, double q)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(h->count - 1)) + 1, seen = 0;
    for (int i = 0; i < REC_HIST_BUCKETS; i++) {
        seen += h->us[i];
        if (seen >= rank)
            return i + 0.5; /* middle of the 1 us bucket */
    }
    return REC_HIST_BUCKETS;
}
