/* SPDX-License-Identifier: BSD-3-Clause */
/* The unit tests' one assertion: report and count a failure, keep going. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

/* Last statement of main: the number of failed checks (capped to stay a
 * valid exit status), 0 when every CHECK held. */
#define CHECK_MAIN_END                                                                 \
    do {                                                                               \
        if (check_failures)                                                            \
            fprintf(stderr, "%s: %d check(s) failed\n", __FILE__, check_failures);     \
        return check_failures < 100 ? check_failures : 100;                            \
    } while (0)

#endif
