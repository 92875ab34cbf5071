/* SPDX-License-Identifier: BSD-3-Clause */
/* The symbol versions a .dynsym's names leave out. A library's .symtab
 * (debug symbols installed) names them ("clock_gettime@@GLIBC_2.17",
 * "clock_gettime@GLIBC_2.2.5"); its .dynsym, all a host without them has,
 * gives both as "clock_gettime", their versions in .gnu.version and
 * .gnu.version_d. The names a recording holds must not depend on which of
 * the two was there (rec_symbol_names.h), so the .dynsym's get theirs. */
#ifndef REC_SYMVER_H
#define REC_SYMVER_H

#include <gelf.h>
#include <stddef.h>

/* The versions of one ELF file, read when a symbol of it is first asked
 * about. Zero-initialised is empty. */
typedef struct rec_symver {
    Elf *elf;          /* the file read, NULL: none yet */
    int usable;        /* its symbols are its .dynsym's and it has versions */
    Elf_Data *dynsym, *versym;
    size_t dynsym_count;
    size_t strtab;     /* the section of .dynsym's names */
    const char **names; /* by version index (.gnu.version_d) */
    size_t nnames;
} rec_symver;

/* The version of symbol ndx of elf (as libdwfl gives it: sym its entry,
 * name its name), or NULL: elf has a .symtab (which libdwfl reads, its
 * names carrying their versions), no versions, the symbol is unversioned
 * or ndx is not that .dynsym entry (libdwfl merges an auxiliary table:
 * checked by name and entry, never guessed). *hidden: a version other than
 * the default. The string lives as long as elf. */
const char *rec_symver_of(rec_symver *v, Elf *elf, int ndx, const char *name, const GElf_Sym *sym,
                          int *hidden);

void rec_symver_free(rec_symver *v);

#endif
