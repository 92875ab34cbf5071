/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/rec_addrset.h"

int rec_addrset_add(rec_addrset *s, uint64_t key)
{
    uint64_t h = zs_mix64(key);
    if (zs_intern_find(&s->table, h, NULL, NULL, NULL) >= 0)
        return 0;
    /* No entry array: the id only marks the slot as used. */
    return zs_intern_add(&s->table, h, 0) ? -1 : 1;
}

void rec_addrset_free(rec_addrset *s)
{
    zs_intern_free(&s->table);
}
