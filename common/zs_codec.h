/* SPDX-License-Identifier: BSD-3-Clause */
/* Byte-level encoding shared by the recording writer and reader: a growable
 * output buffer and a bounds-checked input cursor, both with LEB128 varints. */
#ifndef ZS_CODEC_H
#define ZS_CODEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct zs_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} zs_buf;

int zs_buf_reserve(zs_buf *b, size_t extra);
void zs_buf_free(zs_buf *b);

/* Callers reserve first; the put functions never allocate, so the recorder's
 * per-sample path can encode into a buffer sized once. */
static inline void zs_put_u8(zs_buf *b, uint8_t v) { b->data[b->len++] = v; }

static inline void zs_put_varint(zs_buf *b, uint64_t v)
{
    while (v >= 0x80) {
        b->data[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->data[b->len++] = (uint8_t)v;
}

void zs_put_bytes(zs_buf *b, const void *p, size_t n);
/* Reserves and writes a length-prefixed string. */
int zs_put_string(zs_buf *b, const char *s);

enum { ZS_VARINT_MAX = 10 };

typedef struct zs_cursor {
    const uint8_t *p;
    const uint8_t *end;
} zs_cursor;

/* All getters return 0 on success, -1 when the input ends or is malformed. */
int zs_get_u8(zs_cursor *c, uint8_t *v);
int zs_get_varint(zs_cursor *c, uint64_t *v);
int zs_get_bytes(zs_cursor *c, size_t n, const uint8_t **p);
/* A length-prefixed string; returned pointer is not NUL-terminated. */
int zs_get_string(zs_cursor *c, const char **s, size_t *len);

#endif
