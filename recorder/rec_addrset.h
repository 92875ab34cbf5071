/* A set of 64-bit keys (addresses, or address+length hashes): open
 * addressing, grows at half load. */
#ifndef REC_ADDRSET_H
#define REC_ADDRSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct rec_addrset {
    uint64_t *slots; /* 0 = empty; key 0 is kept in has_zero */
    size_t cap, count;
    int has_zero;
} rec_addrset;

/* 1 when key was added, 0 when it was already there, -1 on no memory. */
int rec_addrset_add(rec_addrset *s, uint64_t key);
void rec_addrset_free(rec_addrset *s);

#endif
