/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_maps.h"

#include <string.h>

/* The fields are read by hand, not with sscanf: it would accept signs, "0x"
 * and overflowing numbers, and a line here need not be NUL-terminated (the
 * unwinder walks one buffer of lines). */
typedef struct cursor {
    const char *p, *end;
} cursor;

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int digit_value(char c, unsigned base)
{
    int v = c >= '0' && c <= '9' ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : 99;
    return v < (int)base ? v : -1;
}

/* One or more digits of base, without overflow. */
static int number(cursor *c, unsigned base, uint64_t *out)
{
    uint64_t n = 0;
    const char *from = c->p;
    for (int d; c->p < c->end && (d = digit_value(*c->p, base)) >= 0; c->p++) {
        if (n > (UINT64_MAX - (uint64_t)d) / base)
            return -1;
        n = n * base + (uint64_t)d;
    }
    *out = n;
    return c->p > from ? 0 : -1;
}

static int expect(cursor *c, char ch)
{
    if (c->p == c->end || *c->p != ch)
        return -1;
    c->p++;
    return 0;
}

/* The blanks between two fields: at least one. */
static int blanks(cursor *c)
{
    const char *from = c->p;
    while (c->p < c->end && is_blank(*c->p))
        c->p++;
    return c->p > from ? 0 : -1;
}

static int perms(cursor *c, char out[5])
{
    size_t n = 0;
    while (c->p + n < c->end && !is_blank(c->p[n]))
        n++;
    if (n != 4)
        return -1;
    memcpy(out, c->p, 4);
    out[4] = '\0';
    c->p += 4;
    return 0;
}

int zs_maps_parse(const char *line, size_t len, zs_maps_line *out)
{
    if (len && line[len - 1] == '\n')
        len--;
    cursor c = {line, line + len};
    uint64_t major, minor;
    if (number(&c, 16, &out->start) || expect(&c, '-') || number(&c, 16, &out->end) ||
        blanks(&c) || perms(&c, out->perms) || blanks(&c) || number(&c, 16, &out->offset) ||
        blanks(&c) || number(&c, 16, &major) || expect(&c, ':') || number(&c, 16, &minor) ||
        blanks(&c) || number(&c, 10, &out->inode) || major > UINT32_MAX || minor > UINT32_MAX)
        return -1;
    if (c.p < c.end && blanks(&c))
        return -1; /* the inode runs into something */
    out->dev_major = (unsigned)major;
    out->dev_minor = (unsigned)minor;
    out->path = c.p;
    out->path_len = (size_t)(c.end - c.p);
    return 0;
}
