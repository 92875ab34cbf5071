#include "rec_stacks.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint64_t hash;
    uint32_t pid;
    uint32_t n;
    zs_frame *frames;
} entry;

struct rec_stacks {
    entry *entries; /* by id */
    size_t count, entries_cap;
    uint32_t *slots; /* id + 1; 0 = empty */
    size_t cap;
};

static uint64_t hash_stack(uint32_t pid, const zs_frame *f, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ pid;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ f[i].func) * 0x100000001b3ULL;
        h ^= h >> 29;
        h = (h ^ f[i].stmt) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h ^ n;
}

rec_stacks *rec_stacks_new(void)
{
    rec_stacks *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = 4096;
    s->slots = calloc(s->cap, sizeof *s->slots);
    if (!s->slots) {
        free(s);
        return NULL;
    }
    return s;
}

static int rehash(rec_stacks *s)
{
    size_t cap = s->cap * 2;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t id = 0; id < s->count; id++) {
        size_t j = s->entries[id].hash & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = (uint32_t)id + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

int64_t rec_stacks_intern(rec_stacks *s, uint32_t pid, const zs_frame *frames, size_t n, int *is_new)
{
    uint64_t h = hash_stack(pid, frames, n);
    size_t j = h & (s->cap - 1);
    *is_new = 0;
    for (; s->slots[j]; j = (j + 1) & (s->cap - 1)) {
        const entry *e = &s->entries[s->slots[j] - 1];
        if (e->hash == h && e->pid == pid && e->n == n && !memcmp(e->frames, frames, n * sizeof *frames))
            return s->slots[j] - 1;
    }
    if (s->count == s->entries_cap) {
        size_t cap = s->entries_cap ? s->entries_cap * 2 : 256;
        entry *e = realloc(s->entries, cap * sizeof *e);
        if (!e)
            return -1;
        s->entries = e;
        s->entries_cap = cap;
    }
    zs_frame *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, frames, n * sizeof *frames);
    s->entries[s->count] = (entry){h, pid, (uint32_t)n, copy};
    s->slots[j] = (uint32_t)++s->count;
    if (2 * s->count > s->cap && rehash(s))
        return -1;
    *is_new = 1;
    return (int64_t)s->count - 1;
}

size_t rec_stacks_count(const rec_stacks *s) { return s->count; }

void rec_stacks_free(rec_stacks *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->entries[i].frames);
    free(s->entries);
    free(s->slots);
    free(s);
}
