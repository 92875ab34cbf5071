/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/rec_stacks.h"

#include <stdlib.h>
#include <string.h>

#include "zs_intern.h"

typedef struct entry {
    uint32_t pid;
    uint32_t n;
    zs_frame *frames;
    int64_t base;  /* the earlier stack sharing the most outermost frames, or -1 */
    uint32_t shared; /* how many */
} entry;

/* index: every stack by its frames. prefixes: every (pid, outermost k
 * frames) of a stack, by the first stack that had them; it holds all the
 * prefixes of every stack (a new stack adds those its base lacks), so the
 * longest one a new stack shares is found by binary search on k. */
struct rec_stacks {
    entry *entries; /* by id */
    size_t count, entries_cap;
    zs_intern index, prefixes;
    uint64_t prefix_hash[ZS_MAX_FRAMES + 1]; /* of the stack being interned */
};

typedef struct stack_key {
    uint32_t pid;
    size_t n;
    const zs_frame *frames;
} stack_key;

/* A word at a time (a byte at a time cost microseconds a stack of native
 * frames, for every sample): the table compares whole keys, so the hash
 * need only spread them. */
static uint64_t hash_pid(uint32_t pid) { return zs_mix64(ZS_FNV_SEED ^ pid); }

static uint64_t hash_frame(uint64_t h, const zs_frame *f)
{
    return zs_mix64(zs_mix64(h ^ f->func) + f->stmt);
}

static uint64_t hash_stack(const stack_key *k)
{
    uint64_t h = hash_pid(k->pid);
    for (size_t i = 0; i < k->n; i++)
        h = hash_frame(h, &k->frames[i]);
    return h;
}

static int same_stack(const void *ctx, uint32_t id, const void *key)
{
    const entry *e = &((const rec_stacks *)ctx)->entries[id];
    const stack_key *k = key;
    return e->frames && e->pid == k->pid && e->n == k->n &&
           !memcmp(e->frames, k->frames, k->n * sizeof *k->frames);
}

typedef struct prefix_key {
    uint32_t pid;
    size_t k;
    const zs_frame *frames;
} prefix_key;

static int same_prefix(const void *ctx, uint32_t id, const void *key)
{
    const entry *e = &((const rec_stacks *)ctx)->entries[id];
    const prefix_key *p = key;
    return e->frames && e->pid == p->pid && e->n >= p->k &&
           !memcmp(e->frames, p->frames, p->k * sizeof *p->frames);
}

/* The stack that first had the k outermost frames of e, or -1. */
static int64_t with_prefix(const rec_stacks *s, const entry *e, size_t k)
{
    prefix_key key = {e->pid, k, e->frames};
    return zs_intern_find(&s->prefixes, s->prefix_hash[k], same_prefix, s, &key);
}

/* Finds the base of stack id (the earlier stack it shares the most
 * outermost frames with) and indexes the prefixes it adds. -1 on no
 * memory. */
static int index_prefixes(rec_stacks *s, uint32_t id)
{
    entry *e = &s->entries[id];
    size_t n = e->n < ZS_MAX_FRAMES ? e->n : ZS_MAX_FRAMES;
    s->prefix_hash[0] = hash_pid(e->pid);
    for (size_t k = 1; k <= n; k++)
        s->prefix_hash[k] = hash_frame(s->prefix_hash[k - 1], &e->frames[k - 1]);
    size_t lo = 0, hi = n; /* prefix lo is known, hi + 1 is not */
    int64_t base = -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        int64_t at = with_prefix(s, e, mid);
        if (at >= 0) {
            lo = mid;
            base = at;
        } else {
            hi = mid - 1;
        }
    }
    e->base = lo >= 2 ? base : -1;
    e->shared = lo >= 2 ? (uint32_t)lo : 0;
    for (size_t k = lo + 1; k <= n; k++)
        if (zs_intern_add(&s->prefixes, s->prefix_hash[k], id))
            return -1;
    return 0;
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
    s->entries[s->count] = (entry){pid, (uint32_t)n, copy, -1, 0};
    index_prefixes(s, (uint32_t)s->count); /* no memory: later stacks share less */
    *is_new = 1;
    return (int64_t)s->count++;
}

size_t rec_stacks_count(const rec_stacks *s) { return s->count; }

int64_t rec_stacks_base(const rec_stacks *s, uint64_t id, size_t *shared)
{
    *shared = s->entries[id].shared;
    return s->entries[id].base;
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
    /* The indexes without them (the table cannot delete in place). */
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
    zs_intern_free(&s->prefixes);
    s->prefixes = (zs_intern){0};
    for (size_t i = 0; i < s->count; i++) /* no memory: later stacks share less */
        if (s->entries[i].frames && index_prefixes(s, (uint32_t)i))
            break;
}

void rec_stacks_free(rec_stacks *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->entries[i].frames);
    free(s->entries);
    zs_intern_free(&s->index);
    zs_intern_free(&s->prefixes);
    free(s);
}
