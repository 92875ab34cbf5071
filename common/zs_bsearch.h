/* SPDX-License-Identifier: BSD-3-Clause */
/* Sorted arrays of records keyed by a uint64_t field: the one binary
 * search of zeek-spy (memory regions, symbols, clock points). */
#ifndef ZS_BSEARCH_H
#define ZS_BSEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The number of the n records (stride bytes apart, sorted by the uint64_t
 * at key_offset in each) whose key is <= key: the index of the first one
 * after key. */
static inline size_t zs_upper_bound(const void *records, size_t n, size_t stride, size_t key_offset,
                                    uint64_t key)
{
    const unsigned char *base = records;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t k;
        memcpy(&k, base + mid * stride + key_offset, sizeof k);
        if (k <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
