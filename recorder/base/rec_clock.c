/* SPDX-License-Identifier: BSD-3-Clause */
#include "base/rec_clock.h"

#include <math.h>
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

/* A uniform in (0, 1], from the top 53 bits. */
static double uniform(rec_clock *c)
{
    return (double)((next_random(c) >> 11) + 1) * 0x1.0p-53;
}

/* The next tick: the smallest of the block's `left` ticks still to come,
 * each uniform in [from, block end), is from + (end - from)(1 - U^(1/left)).
 * So the ticks come in order with nothing stored. */
static uint64_t next_tick(rec_clock *c, uint64_t from)
{
    if (!c->jitter)
        return from + c->period_ns;
    if (!c->left) { /* a new block, from the end of the last */
        from = from > c->block_end ? from : c->block_end;
        c->block_end = from + c->per_block * c->period_ns;
        c->left = c->per_block;
    }
    double span = (double)(c->block_end - from);
    double step = span * (1.0 - pow(uniform(c), 1.0 / (double)c->left));
    c->left--;
    return from + (uint64_t)step;
}

void rec_clock_init(rec_clock *c, double hz, int jitter, uint64_t seed)
{
    c->period_ns = (uint64_t)(1e9 / hz);
    c->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    c->jitter = jitter;
    /* Blocks of about a second. */
    c->per_block = hz >= 1.5 ? (uint64_t)(hz + 0.5) : 1;
    c->left = 0;
    c->block_end = rec_now_ns();
    c->deadline_ns = next_tick(c, c->block_end);
}

uint64_t rec_clock_advance(rec_clock *c, uint64_t now_ns)
{
    uint64_t skipped = 0;
    c->deadline_ns = next_tick(c, c->deadline_ns);
    /* Late by more than a period: the ticks in between were not taken. (A
     * tick due a moment ago, as two close ticks make, is taken at once.) */
    while (c->deadline_ns + c->period_ns < now_ns) {
        skipped++;
        c->deadline_ns = next_tick(c, c->deadline_ns);
    }
    return skipped;
}
