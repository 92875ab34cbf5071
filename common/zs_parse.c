/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

int zs_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v != v)
        return -1;
    *out = v;
    return 0;
}

int zs_parse_number(const char *opt, const char *s, double lo, double hi, double *out, zs_error *err)
{
    double v;
    if (zs_parse_double(s, &v) || !(v >= lo && v <= hi))
        return zs_fail(err, ZS_E_USAGE, "%s: '%s' is not a number in %g..%g", opt, s, lo, hi);
    *out = v;
    return 0;
}

int zs_parse_count(const char *opt, const char *s, uint64_t max, uint64_t *out, zs_error *err)
{
    char *end;
    errno = 0;
    /* strtoull takes "-1" as a huge number: a sign is refused first. */
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v > max)
        return zs_fail(err, ZS_E_USAGE, "%s: '%s' is not a number in 0..%" PRIu64, opt, s, max);
    *out = v;
    return 0;
}

int zs_parse_size(const char *opt, const char *s, uint64_t *out, zs_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (errno || end == s || *end || !(v * mult >= 4096 && v * mult < 1e18))
        return zs_fail(err, ZS_E_USAGE, "%s: '%s' is not a size of at least 4K (e.g. 100M, 2G)",
                       opt, s);
    *out = (uint64_t)(v * mult);
    return 0;
}
