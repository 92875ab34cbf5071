/* SPDX-License-Identifier: BSD-3-Clause */
/* A set of 64-bit keys (addresses, or address+length hashes), on the
 * project's intern table (zs_intern.h). Zero-initialised is empty. */
#ifndef REC_ADDRSET_H
#define REC_ADDRSET_H

#include <stddef.h>
#include <stdint.h>

#include "zs_intern.h"

typedef struct rec_addrset {
    zs_intern table; /* hash zs_mix64(key), a bijection: the hash is the key */
} rec_addrset;

/* 1 when key was added, 0 when it was already there, -1 on no memory. */
int rec_addrset_add(rec_addrset *s, uint64_t key);
void rec_addrset_free(rec_addrset *s);

#endif
