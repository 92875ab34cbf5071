/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_symbols.h"

#include "native/rec_symbol_names.h"
#include "native/rec_symver.h"
#include "zs_grow.h"
#include "zs_bsearch.h"

#include <gelf.h>
#include <stdlib.h>

struct rec_symbol_table {
    Dwfl_Module *mod;
    rec_symbol *v; /* sorted by rec_symbol_order */
    size_t n;
    char *arena;   /* the shown names that are no table's string */
};

static int bind_of(const GElf_Sym *sym)
{
    int bind = GELF_ST_BIND(sym->st_info);
    return bind == STB_GLOBAL ? REC_SYMBOL_GLOBAL : bind == STB_WEAK ? REC_SYMBOL_WEAK : REC_SYMBOL_LOCAL;
}

/* The code symbols of mod with a size, sorted by start and, at one start,
 * best alias first, each with its shown name (rec_symbol_names.h). -1 when
 * out of memory. */
static int load(rec_symbol_table *t, Dwfl_Module *mod)
{
    *t = (rec_symbol_table){mod, NULL, 0, NULL};
    int count = dwfl_module_getsymtab(mod);
    if (count <= 0)
        return 0;
    t->v = malloc((size_t)count * sizeof *t->v);
    if (!t->v)
        return -1;
    rec_symver versions = {0};
    for (int i = 1; i < count; i++) { /* symbol 0 is the null symbol */
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf;
        Dwarf_Addr bias;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        int type = GELF_ST_TYPE(sym.st_info), hidden;
        if (!name || !*name || sym.st_size == 0 || shndx == SHN_UNDEF ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        const char *version = rec_symver_of(&versions, elf, i, name, &sym, &hidden);
        t->v[t->n++] = rec_symbol_make(addr, addr + sym.st_size, name, bind_of(&sym), version, hidden);
    }
    rec_symver_free(&versions);
    /* A total order: which alias names a function does not depend on the
     * table's order, nor on qsort's among equals. */
    qsort(t->v, t->n, sizeof *t->v, rec_symbol_order);
    if (rec_symbol_names_settle(t->v, t->n, &t->arena)) {
        free(t->v);
        t->v = NULL;
        t->n = 0;
        return -1;
    }
    return 0;
}

static rec_symbol_table *table_of(rec_symbols *s, Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->tables[i].mod == mod)
            return &s->tables[i];
    if (zs_grow(&s->tables, &s->cap, s->n + 1, sizeof *s->tables, 16) || load(&s->tables[s->n], mod))
        return NULL;
    return &s->tables[s->n++];
}

/* The index of the first symbol at v[i]'s start, in alias order. */
static size_t run_start(const rec_symbol_table *t, size_t i)
{
    while (i > 0 && t->v[i - 1].start == t->v[i].start)
        i--;
    return i;
}

/* Of the symbols starting where v[first] does (first a run's start), the
 * first in alias order that covers pc; SIZE_MAX when none does. */
static size_t covering(const rec_symbol_table *t, size_t first, uint64_t pc)
{
    for (size_t i = first; i < t->n && t->v[i].start == t->v[first].start; i++)
        if (pc < t->v[i].end)
            return i;
    return SIZE_MAX;
}

const char *rec_symbols_find(rec_symbols *s, Dwfl_Module *mod, uint64_t pc, uint64_t *start)
{
    rec_symbol_table *t = table_of(s, mod);
    if (!t || !t->n)
        return NULL;
    /* The last symbol starting at or below pc. */
    size_t lo = zs_upper_bound(t->v, t->n, sizeof *t->v, offsetof(rec_symbol, start), pc);
    if (lo == 0)
        return NULL;
    /* The symbols starting nearest below pc; else an earlier, larger one
     * covering it (a few runs back at most). */
    size_t first = run_start(t, lo - 1), at = covering(t, first, pc);
    while (at == SIZE_MAX && first > 0 && lo - first < 64) {
        first = run_start(t, first - 1);
        at = covering(t, first, pc);
    }
    if (at == SIZE_MAX)
        return NULL;
    if (start)
        *start = t->v[at].start;
    return t->v[at].shown;
}

const char *rec_symbols_name(rec_symbols *s, Dwfl_Module *mod, uint64_t pc)
{
    return rec_symbols_find(s, mod, pc, NULL);
}

void rec_symbols_clear(rec_symbols *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->tables[i].v);
        free(s->tables[i].arena);
    }
    free(s->tables);
    *s = (rec_symbols){0};
}
