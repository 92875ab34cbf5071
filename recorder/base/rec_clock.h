/* SPDX-License-Identifier: BSD-3-Clause */
/* The sampling clock: absolute deadlines (no drift from the time a sample
 * takes), placed as a Poisson process conditioned on its count: each block
 * of about a second holds exactly rate ticks, each at a uniformly random
 * time within it. So the samples neither alias with Zeek's own periodic work
 * nor miss what sampling itself does to the target. Each stop (and, on a
 * busy host, each wake-up of a real-time recorder) hands the target's core
 * to another thread, and the target waits for it in the state it was
 * sampled in, about a millisecond after the sample. Ticks drawn from
 * 0.5..1.5 periods never fell into those waits and under-counted the states
 * they prolong: on a saturated 2-core VM idle came out 2.4 (blocking) and
 * 2.1 (nonblocking) points above the target's own measure; with these
 * ticks -0.4 and -0.2 (8 paired runs each). Random arrivals see time
 * averages, those waits included, and a fixed count per block keeps the
 * rate exact. Ticks that pass while the recorder is late are counted, never
 * silently dropped. */
#ifndef REC_CLOCK_H
#define REC_CLOCK_H

#include <stdint.h>

typedef struct rec_clock {
    uint64_t period_ns;
    uint64_t deadline_ns;
    uint64_t rng;
    int jitter;            /* 0: a fixed period (tests) */
    uint64_t per_block;    /* ticks in each block */
    uint64_t left;         /* ticks of the current block still to come */
    uint64_t block_end;
} rec_clock;

uint64_t rec_now_ns(void);
void rec_clock_init(rec_clock *c, double hz, int jitter, uint64_t seed);
/* Sets the next deadline after a tick taken at now_ns; returns the number of
 * whole ticks that fell into a delay and were skipped. */
uint64_t rec_clock_advance(rec_clock *c, uint64_t now_ns);

#endif
