/* SPDX-License-Identifier: BSD-3-Clause */
/* Symbol lookup in an executable with libelf: .dynsym first (Zeek exports
 * its symbols dynamically, so a stripped zeek still has them), then .symtab.
 *
 * The executables come from other people (--all opens every process's
 * executable on the host), so what is parsed is bounded: a file beyond the
 * limits below is refused with ZS_E_EXE_REFUSED, never half-read. */
#ifndef ZS_ELF_H
#define ZS_ELF_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "zs_error.h"

/* A real zeek with DWARF is 300-500 MB; a separate debug file as much. */
#define ZS_ELF_MAX_FILE_BYTES ((int64_t)2 << 30)
/* Zeek and its debug file have about 40 sections and 13 segments. */
enum { ZS_ELF_MAX_SECTIONS = 4096, ZS_ELF_MAX_SEGMENTS = 256 };

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
/* The same on an open file; name is only for messages. */
int zs_elf_lookup_fd(int fd, const char *name, zs_elf_symbol *syms, size_t n, zs_elf_info *info,
                     zs_error *err);

/* Reads len bytes at link-time address vaddr from the file's initialised
 * data (a string constant such as Zeek's version), without running it. */
int zs_elf_read(const char *path, uint64_t vaddr, void *buf, size_t len, zs_error *err);
int zs_elf_read_fd(int fd, const char *name, uint64_t vaddr, void *buf, size_t len, zs_error *err);

/* elf_begin on fd after checking the limits (a regular file of at most
 * ZS_ELF_MAX_FILE_BYTES, an x86_64 ELF, at most ZS_ELF_MAX_SECTIONS
 * sections and ZS_ELF_MAX_SEGMENTS segments). The caller elf_end()s it. */
int zs_elf_begin(int fd, const char *name, Elf **out, zs_error *err);

#endif
