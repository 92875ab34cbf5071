/* The sampling clock: absolute deadlines (no drift from the time a sample
 * takes) with each interval drawn uniformly from 0.5..1.5 periods, so the
 * samples do not alias with Zeek's own periodic work. Ticks that pass while
 * the recorder is late are counted, never silently dropped. */
#ifndef REC_CLOCK_H
#define REC_CLOCK_H

#include <stdint.h>

typedef struct rec_clock {
    uint64_t period_ns;
    uint64_t deadline_ns;
    uint64_t rng;
    int jitter;
} rec_clock;

uint64_t rec_now_ns(void);
void rec_clock_init(rec_clock *c, double hz, int jitter, uint64_t seed);
/* Sets the next deadline after a tick taken at now_ns; returns the number of
 * whole ticks that fell into a delay and were skipped. */
uint64_t rec_clock_advance(rec_clock *c, uint64_t now_ns);

#endif
