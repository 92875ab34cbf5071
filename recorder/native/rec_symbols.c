/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_symbols.h"

#include "zs_grow.h"
#include "zs_bsearch.h"

#include <gelf.h>
#include <stdlib.h>

typedef struct symbol {
    uint64_t start, end;
    const char *name;
    int rank; /* 0 global, 1 weak, 2 local: the lower the better */
} symbol;

struct rec_symbol_table {
    Dwfl_Module *mod;
    symbol *v;
    size_t n;
};

static int by_start(const void *a, const void *b)
{
    const symbol *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->rank - y->rank;
}

static int rank_of(const GElf_Sym *sym)
{
    int bind = GELF_ST_BIND(sym->st_info);
    return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

/* The code symbols of mod with a size, sorted by start. -1 when out of
 * memory. */
static int load(rec_symbol_table *t, Dwfl_Module *mod)
{
    *t = (rec_symbol_table){mod, NULL, 0};
    int count = dwfl_module_getsymtab(mod);
    if (count <= 0)
        return 0;
    t->v = malloc((size_t)count * sizeof *t->v);
    if (!t->v)
        return -1;
    for (int i = 1; i < count; i++) { /* symbol 0 is the null symbol */
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf;
        Dwarf_Addr bias;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        int type = GELF_ST_TYPE(sym.st_info);
        if (!name || !*name || sym.st_size == 0 || shndx == SHN_UNDEF ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        t->v[t->n++] = (symbol){addr, addr + sym.st_size, name, rank_of(&sym)};
    }
    qsort(t->v, t->n, sizeof *t->v, by_start);
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

const char *rec_symbols_name(rec_symbols *s, Dwfl_Module *mod, uint64_t pc)
{
    rec_symbol_table *t = table_of(s, mod);
    if (!t || !t->n)
        return NULL;
    /* The last symbol starting at or below pc. */
    size_t lo = zs_upper_bound(t->v, t->n, sizeof *t->v, offsetof(symbol, start), pc);
    if (lo == 0)
        return NULL;
    /* Of the symbols starting there, the best ranked covering pc (sorted
     * by rank within a start); else an earlier, larger one covering it. */
    size_t first = lo - 1;
    uint64_t start = t->v[first].start;
    while (first > 0 && t->v[first - 1].start == start)
        first--;
    for (size_t i = first; i < lo; i++)
        if (pc < t->v[i].end)
            return t->v[i].name;
    for (size_t i = first; i-- > 0 && lo - i < 64;)
        if (pc < t->v[i].end)
            return t->v[i].name;
    return NULL;
}

void rec_symbols_clear(rec_symbols *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->tables[i].v);
    free(s->tables);
    *s = (rec_symbols){0};
}
