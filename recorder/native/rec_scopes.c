/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_scopes.h"

#include "zs_grow.h"

#include <dwarf.h>
#include <stdlib.h>

/* Units kept: the hot code of a zeek lies in a few dozen; each list is a
 * few thousand entries. */
#define REC_SCOPES_UNITS 64
/* Nesting followed: deeper inlining than this is not zeek's. */
#define MAX_DEPTH 64

typedef struct scope_range {
    Dwarf_Addr low, high;
    Dwarf_Off die;
    int depth;
} scope_range;

struct rec_scope_unit {
    Dwarf *dbg;
    Dwarf_Off cu;
    scope_range *v;
    size_t n, cap;
};

static int add_ranges(rec_scope_unit *u, Dwarf_Die *die, int depth)
{
    Dwarf_Addr base, low, high;
    ptrdiff_t at = 0;
    while ((at = dwarf_ranges(die, at, &base, &low, &high)) > 0) {
        if (low >= high)
            continue;
        if (zs_grow(&u->v, &u->cap, u->n + 1, sizeof *u->v, 256))
            return -1;
        u->v[u->n++] = (scope_range){low, high, dwarf_dieoffset(die), depth};
    }
    return 0;
}

/* Lists the subprograms and inlined subroutines under die, depth first. */
static int walk(rec_scope_unit *u, Dwarf_Die *parent, int depth)
{
    Dwarf_Die child;
    if (depth >= MAX_DEPTH || dwarf_child(parent, &child) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&child);
        int scope = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
        if (scope && add_ranges(u, &child, depth))
            return -1;
        /* Inlined code lies in subprograms, lexical blocks and inlined
         * subroutines. GCC puts the code of a function declared in a
         * namespace or class at the unit's top (DW_AT_specification):
         * what namespaces and classes hold (most of a C++ unit's DIEs, all
         * of std:: among them) is declarations, never walked. */
        if ((scope || tag == DW_TAG_lexical_block) && walk(u, &child, depth + 1))
            return -1;
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static rec_scope_unit *unit_of(rec_scopes *s, Dwarf_Die *cu)
{
    Dwarf *dbg = dwarf_cu_getdwarf(cu->cu);
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (size_t i = 0; i < s->n; i++)
        if (s->units[i].dbg == dbg && s->units[i].cu == off)
            return &s->units[i];
    if (!s->units && !(s->units = calloc(REC_SCOPES_UNITS, sizeof *s->units)))
        return NULL;
    rec_scope_unit *u = &s->units[s->n < REC_SCOPES_UNITS ? s->n++ : s->next];
    if (s->n == REC_SCOPES_UNITS)
        s->next = (s->next + 1) % REC_SCOPES_UNITS; /* the oldest goes next */
    free(u->v);
    *u = (rec_scope_unit){dbg, off, NULL, 0, 0};
    if (walk(u, cu, 0)) {
        free(u->v);
        *u = (rec_scope_unit){0};
        return NULL;
    }
    return u;
}

int rec_scopes_at(rec_scopes *s, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die *out, int max)
{
    rec_scope_unit *u = unit_of(s, cu);
    if (!u)
        return -1;
    /* The innermost scope at each depth (ranges of one depth do not
     * overlap), innermost depth first. */
    Dwarf_Off at_depth[MAX_DEPTH] = {0};
    int deepest = -1;
    for (size_t i = 0; i < u->n; i++) {
        const scope_range *r = &u->v[i];
        if (addr >= r->low && addr < r->high) {
            at_depth[r->depth] = r->die;
            if (r->depth > deepest)
                deepest = r->depth;
        }
    }
    int n = 0;
    for (int d = deepest; d >= 0 && n < max; d--)
        if (at_depth[d] && dwarf_offdie(u->dbg, at_depth[d], &out[n]))
            n++;
    return n;
}

void rec_scopes_clear(rec_scopes *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->units[i].v);
    free(s->units);
    *s = (rec_scopes){0};
}
