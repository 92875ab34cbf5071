/* SPDX-License-Identifier: BSD-3-Clause */
/* Unwinding a copied stack at the cost of a table lookup per frame.
 *
 * libdwfl's unwinder runs each frame's CFI program (CIE and FDE
 * instructions, from the start of the function up to the PC) and its
 * expression evaluator again for every frame of every sample: on a real
 * zeek, 50-135 frames deep, that was 1.5-3 ms of CPU a sample. Here each
 * PC's rules are worked out once, with libdw's CFI reader, and kept in the
 * compact form nearly all x86-64 code uses (the approach of the
 * OpenTelemetry eBPF profiler's and Parca Agent's "stack deltas"):
 *   CFA = rsp or rbp + offset; return address at CFA + offset;
 *   rbp unchanged, undefined, or saved at CFA + offset.
 * Everything else (expressions, DRAP, signal frames, code without CFI)
 * answers "general": the caller then unwinds that sample with libdwfl,
 * which knows every form. */
#ifndef REC_CFI_H
#define REC_CFI_H

#include "zs_intern.h"

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

/* How far above a copy a read can still be the stack's (a read further
 * off is a wrong rule, not a short copy): both unwinders judge it so. */
#define REC_UNWIND_STACK_REACH (64ULL << 20)

typedef struct rec_cfi_rule rec_cfi_rule;

/* The rules of the PCs met since the module list last changed. Zero-
 * initialised is empty. */
typedef struct rec_cfi {
    zs_intern by_pc;
    rec_cfi_rule *rules;
    size_t nrules, cap;
} rec_cfi;

/* The registers an unwind starts from, and a copy of the stack from sp. */
typedef struct rec_cfi_start {
    uint64_t pc, sp, fp;
    const uint8_t *stack;
    size_t stack_len;
} rec_cfi_start;

/* What an unwind found: frames [0, n) (pcs already stepped back into the
 * call for every frame but the first), and whether it needed stack above
 * the copy. */
typedef struct rec_cfi_frames {
    uint64_t *pcs, *sps;
    size_t max, n;
    int beyond_copy;
} rec_cfi_frames;

enum {
    REC_CFI_DONE = 1,    /* out holds the whole unwind */
    REC_CFI_GENERAL = 0, /* some frame's rules are not in the compact form */
    REC_CFI_NOMEM = -1,
};

/* Unwinds the copy with the compiled rules, compiling those of PCs not met
 * before from dwfl's modules. */
int rec_cfi_unwind(rec_cfi *t, Dwfl *dwfl, const rec_cfi_start *start, rec_cfi_frames *out);

/* Forgets every rule (the modules changed). */
void rec_cfi_clear(rec_cfi *t);

#endif
