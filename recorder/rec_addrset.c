#include "rec_addrset.h"

#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int grow(rec_addrset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i])
            continue;
        size_t j = slot_of(s->slots[i], cap);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

int rec_addrset_add(rec_addrset *s, uint64_t key)
{
    if (key == 0) {
        int added = !s->has_zero;
        s->has_zero = 1;
        return added;
    }
    if (2 * (s->count + 1) > s->cap && grow(s))
        return -1;
    size_t j = slot_of(key, s->cap);
    for (; s->slots[j]; j = (j + 1) & (s->cap - 1))
        if (s->slots[j] == key)
            return 0;
    s->slots[j] = key;
    s->count++;
    return 1;
}

void rec_addrset_free(rec_addrset *s)
{
    free(s->slots);
    s->slots = NULL;
    s->cap = s->count = 0;
}
