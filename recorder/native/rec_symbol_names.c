/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_symbol_names.h"

#include "zs_symver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rec_symbol rec_symbol_make(uint64_t start, uint64_t end, const char *name, int bind,
                           const char *version, int hidden)
{
    rec_symbol s = {start, end, name, NULL, (uint32_t)strlen(name), (uint8_t)bind, 0, NULL};
    const char *at = zs_symver_at(name);
    if (at) {
        s.plain_len = (uint32_t)(at - name);
        s.other = !zs_symver_is_default(at);
    } else if (version && *version) {
        s.version = version;
        s.other = hidden != 0;
    }
    return s;
}

/* The version's text without its '@'s; "" for none. */
static const char *version_text(const rec_symbol *s)
{
    if (s->version)
        return s->version;
    const char *v = s->name + s->plain_len;
    return v + (*v == '@') + (*v == '@' && v[1] == '@');
}

static int by_plain(const rec_symbol *x, const rec_symbol *y)
{
    if (x->plain_len != y->plain_len)
        return x->plain_len < y->plain_len ? -1 : 1;
    return memcmp(x->name, y->name, x->plain_len);
}

int rec_symbol_order(const void *a, const void *b)
{
    const rec_symbol *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->bind != y->bind)
        return x->bind < y->bind ? -1 : 1;
    if (x->other != y->other)
        return x->other < y->other ? -1 : 1;
    int c = by_plain(x, y);
    if (!c)
        c = strcmp(version_text(x), version_text(y));
    if (c)
        return c;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Names first, then starts: the runs of one plain name. */
static int by_plain_then_start(const void *a, const void *b)
{
    const rec_symbol *x = *(const rec_symbol *const *)a, *y = *(const rec_symbol *const *)b;
    int c = by_plain(x, y);
    if (c)
        return c;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Marks (keep[i]) each symbol of another version than the default whose
 * plain name a global or weak symbol at another start also has: two
 * functions that the plain name would make one. Locals do not count:
 * .dynsym has none, and the name must not depend on which table was read.
 * 0, or -1 when out of memory. */
static int find_shared(rec_symbol *v, size_t n, unsigned char *keep)
{
    size_t m = 0, others = 0;
    for (size_t i = 0; i < n; i++)
        others += v[i].other;
    if (!others) /* nearly every module: nothing to keep, nothing to sort */
        return 0;
    rec_symbol **idx = malloc(n * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (v[i].bind != REC_SYMBOL_LOCAL)
            idx[m++] = &v[i];
    qsort(idx, m, sizeof *idx, by_plain_then_start);
    for (size_t i = 0, j; i < m; i = j) {
        int starts = 0;
        for (j = i + 1; j < m && !by_plain(idx[i], idx[j]); j++)
            starts |= idx[j]->start != idx[i]->start;
        for (size_t k = i; starts && k < j; k++)
            if (idx[k]->other)
                keep[idx[k] - v] = 1;
    }
    free(idx);
    return 0;
}

/* The bytes symbol s needs in the arena for its shown name: 0 when it is
 * its name as it is. */
static size_t arena_bytes(const rec_symbol *s, int keep)
{
    if (keep)
        return s->version ? s->plain_len + 1 + strlen(s->version) + 1 : 0;
    return s->name[s->plain_len] ? s->plain_len + 1 : 0;
}

int rec_symbol_names_settle(rec_symbol *v, size_t n, char **arena)
{
    *arena = NULL;
    unsigned char *keep = calloc(n ? n : 1, 1);
    if (!keep || find_shared(v, n, keep)) {
        free(keep);
        return -1;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += arena_bytes(&v[i], keep[i]);
    if (total && !(*arena = malloc(total))) {
        free(keep);
        return -1;
    }
    char *at = *arena;
    for (size_t i = 0; i < n; i++) {
        rec_symbol *s = &v[i];
        size_t bytes = arena_bytes(s, keep[i]);
        s->shown = bytes ? at : s->name;
        if (!bytes)
            continue;
        memcpy(at, s->name, s->plain_len);
        if (keep[i]) /* a .dynsym name: its version from .gnu.version */
            snprintf(at + s->plain_len, bytes - s->plain_len, "@%s", s->version);
        else
            at[s->plain_len] = '\0';
        at += bytes;
    }
    free(keep);
    return 0;
}
