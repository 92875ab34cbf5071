/* SPDX-License-Identifier: BSD-3-Clause */
/* libdwfl's own unwinder over a copied stack: the general path behind the
 * compiled rules of rec_cfi.h, for the unwinder and for the test that
 * checks those rules against it (tests/tools/unwind_compare.c). */
#ifndef REC_DWFL_UNWIND_H
#define REC_DWFL_UNWIND_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

/* One copy and what its unwind found: frames [0, n) (pcs stepped back into
 * the call for every frame but the first), and whether it needed stack
 * above the copy. */
typedef struct rec_dwfl_copy {
    struct user_regs_struct regs;
    const uint8_t *stack;
    size_t len;
    uint64_t *pcs, *sps;
    size_t max, n;
    int beyond_copy;
} rec_dwfl_copy;

/* Gives dwfl one thread whose registers and stack are c's (c is read at
 * each unwind: it must outlive dwfl). */
bool rec_dwfl_attach(Dwfl *dwfl, rec_dwfl_copy *c);

/* Unwinds the copy c holds now into c's frames. */
void rec_dwfl_unwind(Dwfl *dwfl, rec_dwfl_copy *c);

#endif
