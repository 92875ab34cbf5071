/* SPDX-License-Identifier: BSD-3-Clause */
/* zs_parse: the command-line numbers of both programs, and their messages. */
#include <string.h>

#include "check.h"
#include "zs_parse.h"

static int fails_with(int rc, const zs_error *err, const char *detail)
{
    if (rc == 0 || err->code != ZS_E_USAGE || strcmp(err->detail, detail))
        fprintf(stderr, "got rc %d, \"%s\"; want \"%s\"\n", rc, err->detail, detail);
    return rc == -1 && err->code == ZS_E_USAGE && !strcmp(err->detail, detail);
}

int main(void)
{
    zs_error err = {0};
    double d;
    uint64_t u;

    CHECK(zs_parse_double("120.5", &d) == 0 && d == 120.5);
    CHECK(zs_parse_double("1e3", &d) == 0 && d == 1000);
    CHECK(zs_parse_double("", &d) == -1);
    CHECK(zs_parse_double("12x", &d) == -1);
    CHECK(zs_parse_double("nan", &d) == -1);
    CHECK(zs_parse_double("1e999", &d) == -1); /* out of range */

    CHECK(zs_parse_number("--rate", "250", 1, 10000, &d, &err) == 0 && d == 250);
    CHECK(fails_with(zs_parse_number("--rate", "0", 1, 10000, &d, &err), &err,
                     "--rate: '0' is not a number in 1..10000"));
    CHECK(fails_with(zs_parse_number("--duration", "nan", 0.01, 1e7, &d, &err), &err,
                     "--duration: 'nan' is not a number in 0.01..1e+07"));

    CHECK(zs_parse_count("--top", "0", 1000000, &u, &err) == 0 && u == 0);
    CHECK(zs_parse_count("--pid", "4294967295", UINT32_MAX, &u, &err) == 0 && u == UINT32_MAX);
    CHECK(fails_with(zs_parse_count("--pid", "-1", UINT32_MAX, &u, &err), &err,
                     "--pid: '-1' is not a number in 0..4294967295"));
    CHECK(fails_with(zs_parse_count("--top", "1000001", 1000000, &u, &err), &err,
                     "--top: '1000001' is not a number in 0..1000000"));
    CHECK(fails_with(zs_parse_count("--top", "2.5", 1000000, &u, &err), &err,
                     "--top: '2.5' is not a number in 0..1000000"));
    CHECK(fails_with(zs_parse_count("--top", "99999999999999999999999", 1000000, &u, &err), &err,
                     "--top: '99999999999999999999999' is not a number in 0..1000000"));

    CHECK(zs_parse_size("--max-size", "65536", &u, &err) == 0 && u == 65536);
    CHECK(zs_parse_size("--max-size", "100M", &u, &err) == 0 && u == 100ull << 20);
    CHECK(zs_parse_size("--max-size", "1.5k", &u, &err) == -1); /* under 4K */
    CHECK(zs_parse_size("--max-size", "2G", &u, &err) == 0 && u == 2ull << 30);
    CHECK(fails_with(zs_parse_size("--rotate-size", "10X", &u, &err), &err,
                     "--rotate-size: '10X' is not a size of at least 4K (e.g. 100M, 2G)"));
    CHECK_MAIN_END;
}
