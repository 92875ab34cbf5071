#include "rec_stacks.h"

#include <stdlib.h>
#include <string.h>

#include "zs_intern.h"

/* How far back a new stack looks for the one it shares most with. */
#define REC_STACKS_BASES 32

typedef struct entry {
    uint32_t pid;
    uint32_t n;
    zs_frame *frames;
} entry;

struct rec_stacks {
    entry *entries; /* by id */
    size_t count, entries_cap;
    zs_intern index;
};

typedef struct stack_key {
    uint32_t pid;
    size_t n;
    const zs_frame *frames;
} stack_key;

static uint64_t hash_stack(const stack_key *k)
{
    uint64_t h = zs_fnv1a(ZS_FNV_SEED, &k->pid, sizeof k->pid);
    return zs_fnv1a(h, k->frames, k->n * sizeof *k->frames);
}

static int same_stack(const void *ctx, uint32_t id, const void *key)
{
    const entry *e = &((const rec_stacks *)ctx)->entries[id];
    const stack_key *k = key;
    return e->frames && e->pid == k->pid && e->n == k->n &&
           !memcmp(e->frames, k->frames, k->n * sizeof *k->frames);
}

rec_stacks *rec_stacks_new(void)
{
    return calloc(1, sizeof(rec_stacks));
}

int64_t rec_stacks_intern(rec_stacks *s, uint32_t pid, const zs_frame *frames, size_t n, int *is_new)
{
    stack_key k = {pid, n, frames};
    uint64_t h = hash_stack(&k);
    *is_new = 0;
    int64_t id = zs_intern_find(&s->index, h, same_stack, s, &k);
    if (id >= 0)
        return id;
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
    if (zs_intern_add(&s->index, h, (uint32_t)s->count)) {
        free(copy);
        return -1;
    }
    s->entries[s->count] = (entry){pid, (uint32_t)n, copy};
    *is_new = 1;
    return (int64_t)s->count++;
}

size_t rec_stacks_count(const rec_stacks *s) { return s->count; }

int64_t rec_stacks_base(const rec_stacks *s, uint64_t id, size_t *shared)
{
    int64_t best = -1;
    size_t most = 1;
    const entry *new = &s->entries[id];
    size_t oldest = id > REC_STACKS_BASES ? (size_t)id - REC_STACKS_BASES : 0;
    for (size_t at = (size_t)id; at-- > oldest;) {
        const entry *e = &s->entries[at];
        if (!e->frames || e->pid != new->pid)
            continue;
        size_t k = 0, limit = e->n < new->n ? e->n : new->n;
        while (k < limit && !memcmp(&e->frames[k], &new->frames[k], sizeof *e->frames))
            k++;
        if (k > most) {
            most = k;
            best = (int64_t)at;
        }
    }
    *shared = best >= 0 ? most : 0;
    return best;
}

void rec_stacks_forget_pid(rec_stacks *s, uint32_t pid)
{
    size_t dropped = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (s->entries[i].frames && s->entries[i].pid == pid) {
            free(s->entries[i].frames);
            s->entries[i].frames = NULL; /* its id is never looked up again */
            dropped++;
        }
    }
    if (!dropped)
        return;
    /* The index without them (the table cannot delete in place). */
    zs_intern index = {0};
    for (size_t i = 0; i < s->count; i++) {
        const entry *e = &s->entries[i];
        stack_key k = {e->pid, e->n, e->frames};
        if (e->frames && zs_intern_add(&index, hash_stack(&k), (uint32_t)i)) {
            zs_intern_free(&index);
            return; /* no memory: the old index stays, with the dropped ids unmatchable */
        }
    }
    zs_intern_free(&s->index);
    s->index = index;
}

void rec_stacks_free(rec_stacks *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->entries[i].frames);
    free(s->entries);
    zs_intern_free(&s->index);
    free(s);
}
