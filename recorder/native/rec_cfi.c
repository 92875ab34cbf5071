/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_cfi.h"

#include "zs_grow.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

/* x86-64 DWARF register numbers. */
enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };

typedef enum rule_kind {
    RULE_GENERAL, /* only libdwfl can unwind through this PC */
    RULE_COMPACT,
    RULE_OUTERMOST, /* the return address is undefined: no caller (_start, a thread's start) */
} rule_kind;

typedef enum fp_rule {
    FP_SAME,      /* rbp is the caller's too */
    FP_UNDEFINED, /* the caller's rbp cannot be known */
    FP_SAVED,     /* the caller's rbp is at CFA + fp_offset */
} fp_rule;

struct rec_cfi_rule {
    uint64_t pc;
    int32_t cfa_offset, ra_offset, fp_offset;
    uint8_t kind, cfa_reg, fp;
};

/* A register's rule as an offset from the CFA where it is saved: libdw
 * writes the rule offset(N) as DW_OP_call_frame_cfa [DW_OP_plus_uconst N].
 * 0, or -1 for any other form. */
static int saved_at(const Dwarf_Op *ops, size_t nops, int32_t *offset)
{
    if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa)
        return -1;
    int64_t off = 0;
    if (nops == 2) {
        if (ops[1].atom != DW_OP_plus_uconst)
            return -1;
        off = (int64_t)ops[1].number; /* a negative offset, wrapped */
    }
    if (off < INT32_MIN || off > INT32_MAX)
        return -1;
    *offset = (int32_t)off;
    return 0;
}

/* The CFA's rule, when it is rsp or rbp plus an offset. */
static int cfa_of(Dwarf_Frame *frame, rec_cfi_rule *r)
{
    Dwarf_Op *ops;
    size_t nops;
    if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1)
        return -1;
    uint64_t reg;
    int64_t off;
    if (ops[0].atom == DW_OP_bregx) {
        reg = ops[0].number;
        off = (int64_t)ops[0].number2;
    } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
        reg = ops[0].atom - DW_OP_breg0;
        off = (int64_t)ops[0].number;
    } else {
        return -1;
    }
    if ((reg != REG_RSP && reg != REG_RBP) || off < INT32_MIN || off > INT32_MAX)
        return -1;
    r->cfa_reg = (uint8_t)reg;
    r->cfa_offset = (int32_t)off;
    return 0;
}

/* The caller's rsp must be the CFA itself (the x86-64 ABI's rule, which
 * libdw writes as DW_OP_call_frame_cfa DW_OP_stack_value). */
static int sp_is_cfa(Dwarf_Frame *frame)
{
    Dwarf_Op mem[3], *ops;
    size_t nops;
    return dwarf_frame_register(frame, REG_RSP, mem, &ops, &nops) == 0 && nops == 2 &&
           ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_stack_value;
}

static rec_cfi_rule from_frame(Dwarf_Frame *frame, uint64_t pc)
{
    rec_cfi_rule general = {.pc = pc, .kind = RULE_GENERAL}, r = {.pc = pc, .kind = RULE_COMPACT};
    Dwarf_Addr start, end;
    bool signal;
    if (dwarf_frame_info(frame, &start, &end, &signal) != REG_RA || signal)
        return general;
    if (cfa_of(frame, &r) != 0 || !sp_is_cfa(frame))
        return general;
    Dwarf_Op mem[3], *ops;
    size_t nops;
    if (dwarf_frame_register(frame, REG_RA, mem, &ops, &nops) != 0)
        return general;
    if (nops == 0 && ops) /* undefined */
        r.kind = RULE_OUTERMOST;
    else if (saved_at(ops, nops, &r.ra_offset) != 0)
        return general;
    if (dwarf_frame_register(frame, REG_RBP, mem, &ops, &nops) != 0)
        return general;
    if (nops == 0)
        r.fp = ops ? FP_UNDEFINED : FP_SAME;
    else if (saved_at(ops, nops, &r.fp_offset) == 0)
        r.fp = FP_SAVED;
    else
        return general;
    return r;
}

/* pc's rules from its module's CFI: .eh_frame first, then .debug_frame,
 * the order libdwfl looks in. */
static rec_cfi_rule compile(Dwfl *dwfl, uint64_t pc)
{
    rec_cfi_rule general = {.pc = pc, .kind = RULE_GENERAL};
    Dwfl_Module *mod = dwfl ? dwfl_addrmodule(dwfl, pc) : NULL;
    if (!mod)
        return general;
    Dwarf_Addr bias;
    Dwarf_Frame *frame = NULL;
    Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
    if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0) {
        cfi = dwfl_module_dwarf_cfi(mod, &bias);
        if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
            return general;
    }
    rec_cfi_rule r = from_frame(frame, pc);
    free(frame);
    return r;
}

/* The rules of pc, compiled the first time it is met. NULL when out of
 * memory. */
static const rec_cfi_rule *rule_of(rec_cfi *t, Dwfl *dwfl, uint64_t pc)
{
    uint64_t h = zs_mix64(pc); /* a bijection: the hash is the key */
    int64_t known = zs_intern_find(&t->by_pc, h, NULL, NULL, NULL);
    if (known >= 0)
        return &t->rules[known];
    if (zs_grow(&t->rules, &t->cap, t->nrules + 1, sizeof *t->rules, 1024) ||
        zs_intern_add(&t->by_pc, h, (uint32_t)t->nrules))
        return NULL;
    t->rules[t->nrules] = compile(dwfl, pc);
    return &t->rules[t->nrules++];
}

/* The stack word at addr, from the copy. 0 when it lies outside; then
 * *beyond says whether it lay above the copy, within a stack's reach. */
static int read_word(const rec_cfi_start *s, uint64_t addr, uint64_t *value, int *beyond)
{
    if (addr < s->sp || addr - s->sp > s->stack_len || s->stack_len - (addr - s->sp) < sizeof *value) {
        if (addr >= s->sp && addr - s->sp < REC_UNWIND_STACK_REACH)
            *beyond = 1;
        return 0;
    }
    memcpy(value, s->stack + (addr - s->sp), sizeof *value);
    return 1;
}

int rec_cfi_unwind(rec_cfi *t, Dwfl *dwfl, const rec_cfi_start *s, rec_cfi_frames *out)
{
    uint64_t pc = s->pc, sp = s->sp, fp = s->fp;
    int fp_known = 1;
    out->n = 0;
    out->beyond_copy = 0;
    while (out->n < out->max) {
        /* A return address points after the call: step back into it. */
        uint64_t at = out->n ? pc - 1 : pc;
        out->pcs[out->n] = at;
        out->sps[out->n++] = sp;
        const rec_cfi_rule *r = rule_of(t, dwfl, at);
        if (!r)
            return REC_CFI_NOMEM;
        if (r->kind == RULE_GENERAL || (r->cfa_reg == REG_RBP && !fp_known))
            return REC_CFI_GENERAL;
        if (r->kind == RULE_OUTERMOST)
            break;
        uint64_t cfa = (r->cfa_reg == REG_RSP ? sp : fp) + (uint64_t)(int64_t)r->cfa_offset;
        uint64_t ra;
        if (!read_word(s, cfa + (uint64_t)(int64_t)r->ra_offset, &ra, &out->beyond_copy))
            break;
        uint64_t fp_slot = cfa + (uint64_t)(int64_t)r->fp_offset;
        /* A slot below the frame's stack pointer is dead: GCC's epilogues
         * keep their row "rbp saved at CFA-16" past the `pop %rbp`, up to
         * the `ret`, where rbp holds its caller's value again (and the copy
         * starts at rsp). Read there, a caller that uses rbp as its frame
         * pointer (code built -O0, as libbroker's prometheus-cpp) ended the
         * unwind. */
        if (r->fp == FP_SAVED && fp_slot >= sp)
            fp_known = read_word(s, fp_slot, &fp, &out->beyond_copy);
        else if (r->fp == FP_UNDEFINED)
            fp_known = 0;
        if (ra == 0) /* the end of the chain */
            break;
        pc = ra;
        sp = cfa;
    }
    return REC_CFI_DONE;
}

void rec_cfi_clear(rec_cfi *t)
{
    zs_intern_free(&t->by_pc);
    free(t->rules);
    *t = (rec_cfi){0};
}
