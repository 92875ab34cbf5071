/* SPDX-License-Identifier: BSD-3-Clause */
/* Which of a function's names the recorder writes, and how. One function
 * often has several symbols at its address: aliases (libc's
 * clock_gettime@@GLIBC_2.17, clock_gettime@GLIBC_2.2.5, __clock_gettime,
 * __GI___clock_gettime), each in a table whose order says nothing. The
 * name must not depend on that order, nor on which sampler or host recorded
 * it, nor on whether the library's .symtab (debug symbols installed: names
 * carry their versions) or only its .dynsym (versions in .gnu.version) was
 * there: a differential profile or a fleet's back end keys functions by
 * name. So: one alias chosen by a fixed, total order, and shown as users
 * know it, without its symbol version ("clock_gettime"), unless another
 * function of the module, at another address, would then share that name
 * ("memcpy@GLIBC_2.2.5" beside the default "memcpy"). Pure: no libelf,
 * unit-tested alone. */
#ifndef REC_SYMBOL_NAMES_H
#define REC_SYMBOL_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The binding ranks: the lower the better. */
enum { REC_SYMBOL_GLOBAL, REC_SYMBOL_WEAK, REC_SYMBOL_LOCAL };

typedef struct rec_symbol {
    uint64_t start, end;
    /* As its table has it: "clock_gettime@@GLIBC_2.17" (.symtab of a
     * file whose versions were given by .symver), or "clock_gettime" with
     * its version from .gnu.version in version (.dynsym). */
    const char *name;
    const char *version; /* NULL: none, or the name carries it */
    uint32_t plain_len;  /* name's bytes before its version */
    uint8_t bind;        /* REC_SYMBOL_* */
    uint8_t other;       /* a version other than the default: name@VERSION, or hidden */
    const char *shown;   /* the name written: set by rec_symbol_names_settle */
} rec_symbol;

/* A symbol of the table: version and hidden from .gnu.version (NULL, 0
 * where the name carries its version or there is none). */
rec_symbol rec_symbol_make(uint64_t start, uint64_t end, const char *name, int bind,
                           const char *version, int hidden);

/* qsort's comparison: by start, then the alias to name a function by
 * first: global before weak before local, the default version (or none)
 * before another, the shortest name without its version, then byte order
 * (of that name, then of the version), then the end. Total on everything
 * that is written: aliases sort the same whatever order the table gave. */
int rec_symbol_order(const void *a, const void *b);

/* Sets each symbol's shown name: its name without its version, except a
 * version other than the default of a name that a global or weak symbol
 * at another start also has ("memcpy@GLIBC_2.2.5"). Names that need new
 * bytes are put in one block, *arena (malloc'ed, the caller frees it;
 * NULL when none needed). v in any order. 0, or -1 when out of memory. */
int rec_symbol_names_settle(rec_symbol *v, size_t n, char **arena);

#endif
