/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_clock: each block of ticks holds exactly the rate's count, in order,
 * inside the block; the gaps are those of random arrivals (about 9.5 % of
 * them shorter than a tenth of the period, as for a Poisson process, where
 * 0.5..1.5-period jitter had none); ticks passed while late are counted. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "base/rec_clock.h"

int main(void)
{
    rec_clock c;
    rec_clock_init(&c, 100, 1, 42);
    const uint64_t period = c.period_ns, block = 100 * period;
    uint64_t first_end = c.block_end, prev = c.deadline_ns, short_gaps = 0, gaps = 0;
    double sum = 0;
    int ordered = 1, inside = 1;
    for (int b = 0; b < 200; b++) {
        uint64_t lo = first_end - block + (uint64_t)b * block, hi = lo + block, in_block = 0;
        for (int k = 0; k < 100; k++) {
            uint64_t t = c.deadline_ns;
            inside &= t >= lo && t < hi;
            in_block += t >= lo && t < hi;
            if (b || k) {
                ordered &= t >= prev;
                gaps++;
                short_gaps += t - prev < period / 10;
                sum += (double)(t - prev);
            }
            prev = t;
            CHECK(rec_clock_advance(&c, t) == 0); /* on time: nothing skipped */
        }
        CHECK(in_block == 100);
    }
    CHECK(ordered && inside);
    double mean = sum / (double)gaps / (double)period;
    double frac = (double)short_gaps / (double)gaps;
    CHECK(fabs(mean - 1.0) < 0.02);
    CHECK(frac > 0.085 && frac < 0.105); /* 1 - e^-0.1 = 0.095 */

    /* Three seconds late: about 300 ticks skipped, none twice. */
    uint64_t late = c.deadline_ns + 3000000000ULL;
    uint64_t skipped = rec_clock_advance(&c, late);
    CHECK(skipped > 280 && skipped < 320);
    CHECK(c.deadline_ns + period >= late);

    /* Without jitter: exactly the period. */
    rec_clock_init(&c, 1000, 0, 1);
    uint64_t t0 = c.deadline_ns;
    rec_clock_advance(&c, t0);
    CHECK(c.deadline_ns - t0 == 1000000);
    CHECK_MAIN_END;
}
