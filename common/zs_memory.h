/* SPDX-License-Identifier: BSD-3-Clause */
/* The one interface through which interpreter objects are read: the live
 * process at record time, the snapshot image at convert time. A read is
 * all or nothing, so both sources give the resolver the same answers. */
#ifndef ZS_MEMORY_H
#define ZS_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct zs_memory {
    /* 0 when all len bytes at addr were copied into buf, -1 otherwise. */
    int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    void *ctx;
} zs_memory;

/* A 64-bit word of bytes read from the target (both are x86-64: little-endian). */
static inline uint64_t zs_load_u64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline int zs_mem_read(const zs_memory *m, uint64_t addr, void *buf, size_t len)
{
    return m->read(m->ctx, addr, buf, len);
}

#endif
