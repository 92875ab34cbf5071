/* SPDX-License-Identifier: BSD-3-Clause */
/* Inspects an executable in a sandboxed child. The recorder runs as root and
 * --all opens every process's executable on the host, containers included:
 * parsing them (ELF with libelf, DWARF with libdw) is parsing input written
 * by anyone. So the parsing happens in a forked child that has dropped root
 * (to nobody), cannot gain privileges, runs under CPU, memory and time
 * limits, and hands back only a fixed-size verdict over a pipe. The parent
 * keeps ptrace and the recording; a child that crashes or runs out of time
 * refuses that one executable. */
#ifndef REC_INSPECT_H
#define REC_INSPECT_H

#include <stdint.h>

#include "zs_elf.h"
#include "zs_error.h"
#include "zs_layout.h"

enum { REC_INSPECT_MAX_SYMS = 32 };

/* Verdicts already had, by the executable's identity (device, inode, size,
 * mtime) and the question asked: a worker restarted from the same binary is
 * not parsed again, one rebuilt in place is. */
typedef struct rec_inspect_cache rec_inspect_cache;

typedef struct rec_inspect_request {
    const char *path;      /* what to open (/proc/PID/exe); named in parse errors */
    const char *shown;     /* names it when the inspection itself fails */
    const char *real_path; /* the executable's own path (its debuglink, the test hook) */
    const char *root_dir;  /* the process's root for its debug files (/proc/PID/root), or NULL */
    const char *syms[REC_INSPECT_MAX_SYMS]; /* symbols to look up */
    int nsyms;
    int want_dwarf;        /* also derive a layout from the DWARF */
    const char *zeek_version; /* for the DWARF scan; may be "" */
    rec_inspect_cache *cache; /* or NULL */
    int cancel_fd;         /* > 0: readable means give up (the child is killed); 0: none */
} rec_inspect_request;

typedef struct rec_inspect_symbol {
    uint64_t value, size;
    int found;
} rec_inspect_symbol;

/* What the child found. A file that cannot be parsed is a verdict, not a
 * failure of the inspection: elf_rc/dwarf_rc with their errors. */
typedef struct rec_inspect_verdict {
    int elf_rc;                 /* zs_elf_lookup */
    zs_error elf_err;
    zs_elf_info info;
    rec_inspect_symbol syms[REC_INSPECT_MAX_SYMS];
    int dwarf_rc;               /* zs_dwarf_layout (-1 when not asked) */
    zs_error dwarf_err;
    zs_layout layout;
} rec_inspect_verdict;

/* Time limits of one inspection (wall clock; the CPU limit is the same). */
enum { REC_INSPECT_ELF_SECONDS = 10, REC_INSPECT_DWARF_SECONDS = 90 };

/* Runs the request in a sandboxed child. -1 (ZS_E_EXE_REFUSED, or ZS_E_IO
 * when the file cannot be opened) when there is no trustworthy verdict: the
 * child crashed, ran out of time or memory, or answered nonsense.
 *
 * Test hook: when ZEEK_SPY_TEST_CRASH_INSPECT is set and occurs in the
 * executable's path, the child aborts, as a parser crash would; when
 * ZEEK_SPY_TEST_SLOW_INSPECT is "PART:MS" and PART occurs in it, the child
 * takes MS milliseconds longer, as a large executable's DWARF would. */
int rec_inspect(const rec_inspect_request *req, rec_inspect_verdict *v, zs_error *err);

rec_inspect_cache *rec_inspect_cache_new(void);
/* Inspections answered from the cache, and run. */
void rec_inspect_cache_counts(const rec_inspect_cache *c, uint64_t *hits, uint64_t *runs);
void rec_inspect_cache_free(rec_inspect_cache *c);

#endif
