/* SPDX-License-Identifier: BSD-3-Clause */
/* --when: the expressions it takes and refuses, and which seconds of a
 * load series they keep (rates from two records, the second a sample
 * falls in, metrics a record lacks). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "read/conv_load.h"
#include "read/conv_when.h"

static void parses(const char *text, size_t n, conv_when_metric m0, conv_when_op op0, double v0)
{
    conv_when w;
    zs_error err = {0};
    int rc = conv_when_parse("--when", text, &w, &err);
    if (rc)
        fprintf(stderr, "'%s': %s\n", text, err.detail);
    CHECK(rc == 0 && w.n == n && w.cond[0].metric == m0 && w.cond[0].op == op0 && w.cond[0].value == v0);
}

static void refused(const char *text, const char *why)
{
    conv_when w;
    zs_error err = {0};
    CHECK(conv_when_parse("--when", text, &w, &err) != 0);
    if (!strstr(err.detail, why))
        fprintf(stderr, "'%s': '%s' does not say '%s'\n", text, err.detail, why);
    CHECK(strstr(err.detail, why) != NULL && strstr(err.detail, text) != NULL);
}

static void test_parse(void)
{
    parses("lag > 1s", 1, CONV_WHEN_LAG, CONV_WHEN_GT, 1.0);
    parses("lag>=250ms", 1, CONV_WHEN_LAG, CONV_WHEN_GE, 0.25);
    parses("  queue < 2M and lag > 1", 2, CONV_WHEN_QUEUE, CONV_WHEN_LT, 2.0 * 1024 * 1024);
    parses("pps <= 50000", 1, CONV_WHEN_PPS, CONV_WHEN_LE, 50000);
    parses("drops > 0 and pps > 10 and lag > 0.5s", 3, CONV_WHEN_DROPS, CONV_WHEN_GT, 0);
    refused("lat > 1s", "expected pps, drops, lag or queue");
    refused("lag >> 1s", "expected a number");
    refused("lag = 1s", "expected >, >=, < or <=");
    refused("lag > 1h", "expected a number (s or ms)");
    refused("lag > 1s or pps > 3", "expected 'and' or the end");
    refused("queue > 1X", "expected a number (K, M or G)");
    refused("", "expected pps");
}

static void test_seconds(void)
{
    /* Records at 1, 2 and 3 s: 100 then 300 packets a second; the last
     * second has no lag (a trace file's), the first no predecessor. */
    zs_load l[] = {
        {1000000, 1, ZS_LOAD_COUNTERS | ZS_LOAD_LIVE | ZS_LOAD_LAG, 1000, 0, 0, 100000, 100000, 0},
        {2000000, 1, ZS_LOAD_COUNTERS | ZS_LOAD_LIVE | ZS_LOAD_LAG | ZS_LOAD_QUEUE, 1100, 2, 0, 110000, 1500000, 4096},
        {3000000, 1, ZS_LOAD_COUNTERS, 1400, 2, 0, 140000, 0, 0},
    };
    conv_load_second s;
    CHECK(conv_load_second_at(l, 3, 1500000, &s) == 1 && s.t_us == 2000000 && s.has_rates &&
          s.pps == 100 && s.drops_per_s == 2 && s.has_lag && s.lag_s == 1.5 && s.has_queue);
    CHECK(conv_load_second_at(l, 3, 2000000, &s) == 1 && s.t_us == 2000000);
    CHECK(conv_load_second_at(l, 3, 500000, &s) == 1 && !s.has_rates && s.lag_s == 0.1);
    CHECK(conv_load_second_at(l, 3, 3000001, &s) == 0);

    conv_when w;
    zs_error err = {0};
    CHECK(conv_when_parse("--when", "lag > 1s", &w, &err) == 0);
    CHECK(conv_load_second_at(l, 3, 1500000, &s) && conv_when_keeps(&w, &s));
    CHECK(conv_load_second_at(l, 3, 2500000, &s) && !conv_when_keeps(&w, &s)); /* no lag there */
    CHECK(conv_when_parse("--when", "pps >= 300 and drops < 1", &w, &err) == 0);
    CHECK(conv_load_second_at(l, 3, 2500000, &s) && conv_when_keeps(&w, &s));
    CHECK(conv_load_second_at(l, 3, 1500000, &s) && !conv_when_keeps(&w, &s));
    /* Counters that went back (the source opened anew): no rate. */
    l[2].received = 10;
    CHECK(conv_load_second_at(l, 3, 2500000, &s) && !s.has_rates && !conv_when_keeps(&w, &s));
}

int main(void)
{
    test_parse();
    test_seconds();
    CHECK_MAIN_END;
}
