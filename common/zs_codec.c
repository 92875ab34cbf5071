/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_codec.h"

#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"

int zs_buf_reserve(zs_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len)
        return -1;
    return zs_grow(&b->data, &b->cap, b->len + extra, 1, 4096);
}

void zs_buf_free(zs_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void zs_put_bytes(zs_buf *b, const void *p, size_t n)
{
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

int zs_put_string(zs_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (zs_buf_reserve(b, n + ZS_VARINT_MAX))
        return -1;
    zs_put_varint(b, n);
    zs_put_bytes(b, s, n);
    return 0;
}

int zs_get_u8(zs_cursor *c, uint8_t *v)
{
    if (c->p >= c->end)
        return -1;
    *v = *c->p++;
    return 0;
}

int zs_get_varint(zs_cursor *c, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end)
            return -1;
        uint8_t byte = *c->p++;
        r |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

int zs_get_bytes(zs_cursor *c, size_t n, const uint8_t **p)
{
    if ((size_t)(c->end - c->p) < n)
        return -1;
    *p = c->p;
    c->p += n;
    return 0;
}

int zs_get_string(zs_cursor *c, const char **s, size_t *len)
{
    uint64_t n;
    const uint8_t *p;
    if (zs_get_varint(c, &n) || zs_get_bytes(c, n, &p))
        return -1;
    *s = (const char *)p;
    *len = n;
    return 0;
}
