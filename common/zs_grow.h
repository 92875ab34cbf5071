/* SPDX-License-Identifier: BSD-3-Clause */
/* Room in a growable array: the one way every list in zeek-spy grows. */
#ifndef ZS_GROW_H
#define ZS_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for `need` items of `size` bytes in the array *itemsp (a
 * pointer to the array's pointer) of capacity *cap, doubling from `first`.
 * 0, or -1 when out of memory or the size would overflow (the array and
 * *cap are then unchanged). */
static inline int zs_grow(void *itemsp, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / size)
        return -1;
    void *items;
    memcpy(&items, itemsp, sizeof items); /* any T **, without aliasing it as void ** */
    void *more = realloc(items, n * size);
    if (!more)
        return -1;
    memcpy(itemsp, &more, sizeof more);
    *cap = n;
    return 0;
}

#endif
