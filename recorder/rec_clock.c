#include "rec_clock.h"

#include <time.h>

uint64_t rec_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t next_random(rec_clock *c)
{
    /* xorshift64*: plenty for jitter, no global state. */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return c->rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t interval(rec_clock *c)
{
    if (!c->jitter)
        return c->period_ns;
    return c->period_ns / 2 + next_random(c) % (c->period_ns + 1);
}

void rec_clock_init(rec_clock *c, double hz, int jitter, uint64_t seed)
{
    c->period_ns = (uint64_t)(1e9 / hz);
    c->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    c->jitter = jitter;
    c->deadline_ns = rec_now_ns() + interval(c);
}

uint64_t rec_clock_advance(rec_clock *c, uint64_t now_ns)
{
    uint64_t skipped = 0;
    /* Late by more than a period: the ticks in between were not taken. */
    if (now_ns > c->deadline_ns + c->period_ns) {
        skipped = (now_ns - c->deadline_ns) / c->period_ns;
        c->deadline_ns = now_ns;
    }
    c->deadline_ns += interval(c);
    return skipped;
}
