/* SPDX-License-Identifier: BSD-3-Clause */
/* Scripts compiled with -O ZAM: which Funcs run a ZAM body (a ZBody, known
 * by its vtable), and which instruction the innermost of them was running
 * when a sample's registers and stack were copied. ZAM keeps its current
 * instruction (`z`, a pointer into the body's instruction array) in a
 * callee-saved register or a stack slot of ZBody::Exec, never in memory a
 * reader could name; the copy holds it, in a register or where a callee
 * saved it. Runs after the target resumed, on the copy the stop window
 * took for native frames: nothing is read from the target in the window. */
#ifndef REC_ZAM_H
#define REC_ZAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "zs_format.h"
#include "zs_layout.h"

typedef struct rec_zam rec_zam;

/* Where the target's ZAM objects are known from: what their vtable
 * pointers hold and where its scopes live (0: unknown). */
typedef struct rec_zam_symbols {
    uint64_t body_vtable;    /* a ZBody's: no ZAM known without it */
    uint64_t scopes;         /* Scope.cc's scope stack */
    uint64_t funcval_vtable; /* a FuncVal's */
} rec_zam_symbols;

/* What one sample's window copied. */
typedef struct rec_zam_copy {
    const struct user_regs_struct *regs;
    const uint8_t *stack; /* from regs->rsp up */
    size_t len;
} rec_zam_copy;

typedef enum rec_zam_result {
    REC_ZAM_NONE,      /* no script frame runs a ZAM body */
    REC_ZAM_FOUND,     /* its frame's stmt now names the instruction */
    REC_ZAM_MISSING,   /* no word of the copy points at one of its instructions */
    REC_ZAM_AMBIGUOUS, /* words point at different ones: counted, never guessed */
} rec_zam_result;

enum { REC_ZAM_CANDIDATES = 8 };

/* The words of one copy that point at an instruction of the innermost ZAM
 * frame's bodies: kept with the sample until its unwind says where
 * ZBody::Exec's frame starts. */
typedef struct rec_zam_found {
    int frame;       /* that frame's index in the sample's frames; -1: none */
    uint64_t rsp;    /* the copy's stack pointer, which offsets count from */
    unsigned n;      /* distinct (value, place) pairs kept */
    int overflow;    /* more than REC_ZAM_CANDIDATES */
    struct {
        uint64_t value;
        int64_t offset; /* from the copy's rsp; -1: a register */
        int first;      /* the array's first instruction: also the array itself */
    } c[REC_ZAM_CANDIDATES];
} rec_zam_found;

/* NULL when the layout or the executable knows no ZAM (body_vtable 0), or
 * on no memory. */
rec_zam *rec_zam_new(pid_t pid, const zs_layout *l, const rec_zam_symbols *syms);
void rec_zam_free(rec_zam *z);

/* frames (outermost first) with addrs (each script frame's Frame, 8.1+;
 * NULL before): the words of copy that point at an instruction of the
 * innermost frame whose Func runs a ZAM body (BiFs inside it are passed
 * over; an interpreted function ends the search). */
void rec_zam_collect(rec_zam *z, const zs_frame *frames, const uint64_t *addrs, size_t n,
                     const rec_zam_copy *copy, rec_zam_found *out);

/* Picks the instruction and marks frames[found->frame]'s stmt with it
 * (zs_stmt_is_zam). exec_sp: where the innermost ZBody::Exec's own frame
 * starts (0: not known). The instruction is in a register,
 * or saved by a callee of Exec below that, or (when neither holds one) in
 * Exec's own frame; an older one may linger in Exec's frame, so it counts
 * only when the places below have none. A pointer to the first instruction
 * is also the array's base, which Exec keeps at hand: it counts only when
 * no other instruction is seen. */
rec_zam_result rec_zam_choose(const rec_zam_found *found, uint64_t exec_sp, zs_frame *frames);

/* frames (n, outermost first) with the ZAM frame that rec_zam_choose
 * marked opened up where its instruction's locations do not chain (Zeek
 * 7.2 on): that frame at the call of the function it inlined, then each
 * function inlined there at the call of the next, the innermost at the
 * instruction, each a script frame running its instruction (zs_stmt_is_zam).
 * Into out (max frames); 0 when there is nothing to open up (frames stay
 * as they are). */
size_t rec_zam_expand(rec_zam *z, const zs_frame *frames, size_t n, zs_frame *out, size_t max);

/* Whether the unwinder's symbol (id, and its mangled name) is ZBody::Exec
 * by the layout's name: compared by name until it is first seen, by id
 * after. */
int rec_zam_is_exec(rec_zam *z, uint32_t symbol, const char *name);

#endif
