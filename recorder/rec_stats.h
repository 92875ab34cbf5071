/* What sampling costs the target, measured by the recorder itself: stop
 * time per sample (interrupt to continue) as a histogram for p50/p99. */
#ifndef REC_STATS_H
#define REC_STATS_H

#include <stdint.h>

enum { REC_STATS_BUCKETS = 20000 }; /* 1 us each; the last one is "more" */

typedef struct rec_stats {
    uint64_t samples;
    uint64_t skipped;
    uint64_t torn;
    uint64_t deep;   /* stacks cut at the maximum depth */
    uint64_t failed; /* samples lost to a failed read */
    uint64_t stop_ns_total;
    uint64_t stop_max_ns;
    uint32_t stop_us[REC_STATS_BUCKETS];
} rec_stats;

void rec_stats_stop(rec_stats *s, uint64_t ns);
/* Stop time in microseconds at quantile q (0..1). */
double rec_stats_quantile_us(const rec_stats *s, double q);
uint64_t rec_stats_stops(const rec_stats *s);

#endif
