/* Symbol lookup in an executable with libelf: .dynsym first (Zeek exports
 * its symbols dynamically, so a stripped zeek still has them), then .symtab. */
#ifndef ZS_ELF_H
#define ZS_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "zs_error.h"

typedef struct zs_elf_symbol {
    const char *name; /* in: the exact (mangled) name */
    uint64_t value;   /* out: link-time address */
    uint64_t size;
    int found;
} zs_elf_symbol;

typedef struct zs_elf_info {
    int is_pie;            /* ET_DYN: addresses are relative to the load bias */
    uint64_t first_vaddr;  /* page-aligned vaddr of the first PT_LOAD */
    char build_id[81];     /* hex, "" when the note is absent */
    int has_debug_info;    /* a .debug_info section is present */
} zs_elf_info;

/* Fills info and each symbol's value/found. Missing symbols are not an error. */
int zs_elf_lookup(const char *path, zs_elf_symbol *syms, size_t n, zs_elf_info *info, zs_error *err);

/* Reads len bytes at link-time address vaddr from the file's initialised
 * data (a string constant such as Zeek's version), without running it. */
int zs_elf_read(const char *path, uint64_t vaddr, void *buf, size_t len, zs_error *err);

#endif
