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
    rec_symbol *v; /* sized symbols, sorted by rec_symbol_order; then the sizeless */
    size_t n;
    rec_symbol *labels; /* sizeless code symbols (in v's block), each ending at the next symbol */
    size_t nlabels;
    char *arena;   /* the shown names that are no table's string */
};

static int bind_of(const GElf_Sym *sym)
{
    int bind = GELF_ST_BIND(sym->st_info);
    return bind == STB_GLOBAL ? REC_SYMBOL_GLOBAL : bind == STB_WEAK ? REC_SYMBOL_WEAK : REC_SYMBOL_LOCAL;
}

/* The end of the executable section shndx of elf, in the process (bias
 * added); 0 when it is none. */
static uint64_t code_section_end(Elf *elf, GElf_Word shndx, Dwarf_Addr bias)
{
    GElf_Shdr mem, *sh = elf ? gelf_getshdr(elf_getscn(elf, shndx), &mem) : NULL;
    return sh && (sh->sh_flags & SHF_EXECINSTR) ? sh->sh_addr + sh->sh_size + bias : 0;
}

/* A sizeless symbol (an assembler label) runs to the next symbol, within
 * its section: labels' ends, from the sorted sized symbols and labels. */
static void end_labels(rec_symbol_table *t)
{
    for (size_t i = 0; i < t->nlabels; i++) {
        rec_symbol *l = &t->labels[i];
        size_t after = zs_upper_bound(t->v, t->n, sizeof *t->v, offsetof(rec_symbol, start), l->start);
        if (after < t->n && t->v[after].start < l->end)
            l->end = t->v[after].start;
        for (size_t j = i + 1; j < t->nlabels; j++)
            if (t->labels[j].start > l->start) {
                if (t->labels[j].start < l->end)
                    l->end = t->labels[j].start;
                break;
            }
    }
}

/* The code symbols of mod, sorted by start and, at one start, best alias
 * first, each with its shown name (rec_symbol_names.h): those with a size,
 * and apart the sizeless ones in code (labels of hand-written assembly),
 * which libdwfl's lookup would otherwise have to find by reading the whole
 * table again for every PC no sized symbol covers. -1 when out of memory. */
static int load(rec_symbol_table *t, Dwfl_Module *mod)
{
    *t = (rec_symbol_table){mod, NULL, 0, NULL, 0, NULL};
    int count = dwfl_module_getsymtab(mod);
    if (count <= 0)
        return 0;
    t->v = malloc((size_t)count * sizeof *t->v);
    if (!t->v)
        return -1;
    /* Sized ones from the front, labels from the back. */
    size_t back = (size_t)count;
    rec_symver versions = {0};
    for (int i = 1; i < count; i++) { /* symbol 0 is the null symbol */
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf;
        Dwarf_Addr bias;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        int type = GELF_ST_TYPE(sym.st_info), hidden;
        if (!name || !*name || shndx == SHN_UNDEF ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        uint64_t end = addr + sym.st_size;
        if (sym.st_size == 0 && ((end = code_section_end(elf, shndx, bias)) <= addr))
            continue;
        const char *version = rec_symver_of(&versions, elf, i, name, &sym, &hidden);
        rec_symbol made = rec_symbol_make(addr, end, name, bind_of(&sym), version, hidden);
        t->v[sym.st_size ? t->n++ : --back] = made;
    }
    rec_symver_free(&versions);
    t->labels = t->v + back;
    t->nlabels = (size_t)count - back;
    /* Shown names settled over both (a label's name is a function's too),
     * then a total order: which alias names a function does not depend on
     * the table's order, nor on qsort's among equals. */
    memmove(t->v + t->n, t->labels, t->nlabels * sizeof *t->v);
    t->labels = t->v + t->n;
    qsort(t->v, t->n, sizeof *t->v, rec_symbol_order);
    qsort(t->labels, t->nlabels, sizeof *t->v, rec_symbol_order);
    end_labels(t);
    if (rec_symbol_names_settle(t->v, t->n + t->nlabels, &t->arena)) {
        free(t->v);
        *t = (rec_symbol_table){mod, NULL, 0, NULL, 0, NULL};
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
static size_t run_start(const rec_symbol *v, size_t i)
{
    while (i > 0 && v[i - 1].start == v[i].start)
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

/* The label covering pc (no sized symbol does), or NULL. */
static const rec_symbol *label_at(const rec_symbol_table *t, uint64_t pc)
{
    size_t at = zs_upper_bound(t->labels, t->nlabels, sizeof *t->labels, offsetof(rec_symbol, start), pc);
    if (at == 0)
        return NULL;
    at = run_start(t->labels, at - 1);
    return pc < t->labels[at].end ? &t->labels[at] : NULL;
}

static const char *found(const rec_symbol *sym, uint64_t *start)
{
    if (!sym)
        return NULL;
    if (start)
        *start = sym->start;
    return sym->shown;
}

const char *rec_symbols_find(rec_symbols *s, Dwfl_Module *mod, uint64_t pc, uint64_t *start)
{
    rec_symbol_table *t = table_of(s, mod);
    if (!t)
        return NULL;
    /* The last symbol starting at or below pc. */
    size_t lo = zs_upper_bound(t->v, t->n, sizeof *t->v, offsetof(rec_symbol, start), pc);
    if (lo == 0)
        return found(label_at(t, pc), start);
    /* The symbols starting nearest below pc; else an earlier, larger one
     * covering it (a few runs back at most). */
    size_t first = run_start(t->v, lo - 1), at = covering(t, first, pc);
    while (at == SIZE_MAX && first > 0 && lo - first < 64) {
        first = run_start(t->v, first - 1);
        at = covering(t, first, pc);
    }
    return found(at == SIZE_MAX ? label_at(t, pc) : &t->v[at], start);
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
