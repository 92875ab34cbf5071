/* SPDX-License-Identifier: BSD-3-Clause */
/* Functions ZAM inlined into functions it inlined, where the instruction's
 * locations do not say so. From Zeek 7.2 on a ZInst's ZAMLocInfo names only
 * the innermost function (no parent), and a statement that follows an
 * inlined call carries the callee's name. The path from a ZAM body down to
 * the function an instruction runs in is rebuilt from the body's
 * instruction array, in compile order, and the extents of the script
 * functions it names (looked up by name in the global scope): each
 * instruction belongs to the function whose body holds its line; a function
 * met that is not on the path so far was entered from the one before it
 * (the instruction before: its call), one that is on it was returned to.
 * Read from the live process after it runs again; a body's paths are kept
 * (bodies live as long as the scripts). */
#ifndef REC_ZAM_INLINE_H
#define REC_ZAM_INLINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zs_layout.h"

typedef struct rec_zam_inline rec_zam_inline;

/* One function on the path and the instruction it runs: for all but the
 * innermost, the call of the next one. */
typedef struct rec_zam_hop {
    uint64_t func;
    uint64_t inst;
} rec_zam_hop;

/* scopes: where Scope.cc's scope stack lives; funcval_vtable: what a
 * FuncVal's vtable pointer holds. NULL when the layout cannot find
 * functions by name, or either is 0, or on no memory. */
rec_zam_inline *rec_zam_inline_new(pid_t pid, const zs_layout *l, uint64_t scopes,
                                   uint64_t funcval_vtable);
void rec_zam_inline_free(rec_zam_inline *zi);

/* The path of instruction inst of the ZAM body [insts, end) that func's
 * frame runs: hops[0] is func at its call of hops[1].func, ..., the last
 * the innermost function at inst. 0 when inst runs in func itself, when
 * the locations chain up to func on their own (Zeek 7.0, 7.1), or when the
 * path cannot be told (the frame stays as it is). */
size_t rec_zam_inline_path(rec_zam_inline *zi, uint64_t func, uint64_t insts, uint64_t end,
                           uint64_t inst, rec_zam_hop *hops, size_t max);

#endif
