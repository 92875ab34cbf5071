/* SPDX-License-Identifier: BSD-3-Clause */
/* What sampling costs the targets, measured by the recorder itself, and
 * what it took. A blocking sample's window (interrupt to continue) has two
 * parts: the wait for the target to reach its stop (on a saturated host
 * mostly the target waiting for a core, which it would have waited anyway)
 * and the time it is held in the stop (the read and the resume). */
#ifndef REC_STATS_H
#define REC_STATS_H

#include <stdint.h>

enum { REC_HIST_BUCKETS = 20000 }; /* 1 us each; the last one is "more" */

typedef struct rec_hist {
    uint64_t count;
    uint64_t total_ns;
    uint64_t max_ns;
    uint32_t us[REC_HIST_BUCKETS];
} rec_hist;

typedef struct rec_stats {
    uint64_t samples;   /* stacks read */
    uint64_t credited;  /* further ticks a late stop's sample stands for */
    uint64_t skipped;   /* ticks not taken: recorder late, or a target that
                           did not stop within the deadline */
    uint64_t late_stops; /* interrupts not answered within the deadline */
    uint64_t torn;
    uint64_t deep;      /* stacks cut at the maximum depth */
    uint64_t failed;    /* samples lost to a failed read */
    uint64_t elsewhere_samples; /* samples whose stop waited for housekeeping */
    rec_hist window;    /* interrupt to continue */
    rec_hist wait;      /* interrupt to the stop seen, less elsewhere: the
                           target on its way to its stop */
    rec_hist elsewhere; /* the loop on housekeeping while that stop was
                           pending (none by design: a regression shows here) */
    rec_hist held;      /* stop seen to continue: the reads */
} rec_stats;

void rec_hist_add(rec_hist *h, uint64_t ns);
/* Microseconds at quantile q (0..1); 0 when empty. */
double rec_hist_quantile_us(const rec_hist *h, double q);

#endif
