/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_hex.h"

#include <stdint.h>

size_t zs_hex(char *out, size_t size, const void *data, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *b = data;
    if (!size)
        return 0;
    size_t i = 0;
    for (; i < n && 2 * i + 2 < size; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * i] = '\0';
    return i;
}
