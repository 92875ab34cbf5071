/* SPDX-License-Identifier: BSD-3-Clause */
/* Hashing and interning, once for the whole project: FNV-1a over bytes, a
 * 64-bit mixer for integer keys, and an open-addressing table of entry ids
 * that every intern table (the recorder's stacks and address sets, the
 * converter's functions, locations, stacks and pprof strings) is built on.
 *
 * The table holds only (hash, id) pairs: the entries live in the caller's
 * array, indexed by id, so growing the table never touches them and never
 * needs to hash them again. */
#ifndef ZS_INTERN_H
#define ZS_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define ZS_FNV_SEED 14695981039346656037ULL

/* FNV-1a of n bytes, continuing from h (ZS_FNV_SEED to start). */
uint64_t zs_fnv1a(uint64_t h, const void *p, size_t n);

/* A bijective mix of a 64-bit key (murmur3's finalizer steps): spreads
 * addresses, which share their low and high bits, over the table. Being a
 * bijection, equal hashes mean equal keys. */
uint64_t zs_mix64(uint64_t key);

typedef struct zs_intern_slot {
    uint64_t hash;
    uint32_t id1; /* id + 1; 0: empty */
} zs_intern_slot;

/* Zero-initialised is an empty table. */
typedef struct zs_intern {
    zs_intern_slot *slots;
    size_t cap;   /* power of two, or 0 */
    size_t count;
} zs_intern;

/* Whether the entry id is the key looked for (ctx: the caller's array). */
typedef int (*zs_intern_eq)(const void *ctx, uint32_t id, const void *key);

/* The id of the entry with this hash for which eq() holds (eq NULL: the
 * hash alone identifies the key), or -1 when there is none. */
int64_t zs_intern_find(const zs_intern *t, uint64_t hash, zs_intern_eq eq, const void *ctx,
                       const void *key);

/* Adds id under hash (the caller has found it absent); grows the table to
 * stay at most half full. 0, or -1 on no memory (the table is unchanged). */
int zs_intern_add(zs_intern *t, uint64_t hash, uint32_t id);

void zs_intern_free(zs_intern *t);

#endif
