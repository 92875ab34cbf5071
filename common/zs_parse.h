/* SPDX-License-Identifier: BSD-3-Clause */
/* Numbers from the command line, parsed one way in both programs: the
 * whole argument must be the number, and a failure is a usage error that
 * names the option and the value. */
#ifndef ZS_PARSE_H
#define ZS_PARSE_H

#include <stdint.h>

#include "zs_error.h"

/* A whole string as a double (strtod's forms; not NaN). 0 or -1, no message. */
int zs_parse_double(const char *s, double *out);

/* A number in lo..hi: "OPT: 'S' is not a number in LO..HI". */
int zs_parse_number(const char *opt, const char *s, double lo, double hi, double *out, zs_error *err);

/* A decimal integer in 0..max: "OPT: 'S' is not a number in 0..MAX". */
int zs_parse_count(const char *opt, const char *s, uint64_t max, uint64_t *out, zs_error *err);

/* "100M", "2G", "65536": bytes with binary suffixes (k, M, G, T), at least
 * 4K: "OPT: 'S' is not a size of at least 4K (e.g. 100M, 2G)". */
int zs_parse_size(const char *opt, const char *s, uint64_t *out, zs_error *err);

#endif
