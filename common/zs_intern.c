/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_intern.h"

#include <stdlib.h>

uint64_t zs_fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

uint64_t zs_mix64(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
}

int64_t zs_intern_find(const zs_intern *t, uint64_t hash, zs_intern_eq eq, const void *ctx,
                       const void *key)
{
    if (!t->cap)
        return -1;
    size_t mask = t->cap - 1;
    for (size_t j = hash & mask; t->slots[j].id1; j = (j + 1) & mask) {
        const zs_intern_slot *s = &t->slots[j];
        if (s->hash == hash && (!eq || eq(ctx, s->id1 - 1, key)))
            return (int64_t)s->id1 - 1;
    }
    return -1;
}

static void place(zs_intern_slot *slots, size_t cap, uint64_t hash, uint32_t id1)
{
    size_t j = hash & (cap - 1);
    while (slots[j].id1)
        j = (j + 1) & (cap - 1);
    slots[j] = (zs_intern_slot){hash, id1};
}

static int grow(zs_intern *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    zs_intern_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].id1)
            place(slots, cap, t->slots[i].hash, t->slots[i].id1);
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

int zs_intern_add(zs_intern *t, uint64_t hash, uint32_t id)
{
    if (id == UINT32_MAX || (2 * (t->count + 1) > t->cap && grow(t)))
        return -1;
    place(t->slots, t->cap, hash, id + 1);
    t->count++;
    return 0;
}

void zs_intern_free(zs_intern *t)
{
    free(t->slots);
    *t = (zs_intern){0};
}
