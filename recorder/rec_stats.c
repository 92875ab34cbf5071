#include "rec_stats.h"

void rec_stats_stop(rec_stats *s, uint64_t ns)
{
    uint64_t us = ns / 1000;
    s->stop_us[us < REC_STATS_BUCKETS ? us : REC_STATS_BUCKETS - 1]++;
    s->stop_ns_total += ns;
    if (ns > s->stop_max_ns)
        s->stop_max_ns = ns;
}

uint64_t rec_stats_stops(const rec_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < REC_STATS_BUCKETS; i++)
        n += s->stop_us[i];
    return n;
}

double rec_stats_quantile_us(const rec_stats *s, double q)
{
    uint64_t n = rec_stats_stops(s);
    if (!n)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(n - 1)) + 1, seen = 0;
    for (int i = 0; i < REC_STATS_BUCKETS; i++) {
        seen += s->stop_us[i];
        if (seen >= rank)
            return i + 0.5; /* middle of the 1 us bucket */
    }
    return REC_STATS_BUCKETS;
}
