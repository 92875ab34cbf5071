/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors: one code per failure kind, its message in one table (zs_error.c),
 * a detail line filled where the failure happens, printed once at top level. */
#ifndef ZS_ERROR_H
#define ZS_ERROR_H

#include <stdarg.h>

typedef enum zs_code {
    ZS_OK = 0,
    ZS_E_USAGE,
    ZS_E_IO,
    ZS_E_NOMEM,
    ZS_E_NOT_RECORDING,
    ZS_E_FORMAT_VERSION,
    ZS_E_CORRUPT,
    ZS_E_TRUNCATED,
    ZS_E_NO_PROCESS,
    ZS_E_PERMISSION,
    ZS_E_NOT_ZEEK,
    ZS_E_UNSUPPORTED,
    ZS_E_LAYOUT,
    ZS_E_TARGET,
    ZS_E_CACHE,
    ZS_E_OUTPUT,
    ZS_E_EXE_REFUSED, /* an executable malformed or beyond the parsing limits */
    ZS_E_NO_BPF,      /* BPF sampling cannot run here: ptrace remains the way in */
    ZS_E_STARTING,    /* a process in the middle of its exec: worth another look soon */
    ZS_E__COUNT
} zs_code;

typedef struct zs_error {
    zs_code code;
    char detail[768];
} zs_error;

/* Records the failure and returns -1 so callers can `return zs_fail(...)`. */
int zs_fail(zs_error *err, zs_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

const char *zs_code_message(zs_code code);

/* "prog: error: <kind>: <detail>" on stderr, one line. */
void zs_error_print(const char *prog, const zs_error *err);

/* Process exit status for a failure kind (usage errors 2, the rest 1). */
int zs_exit_status(const zs_error *err);

/* What library code has to tell the user that is not a failure: it does not
 * print, it hands the text (one line, no newline) to its caller's sink, and
 * the command line decides whether and how it is shown (-q, the program's
 * name, a progress line rewritten in place). */
typedef enum zs_note_kind { ZS_NOTE_WARNING, ZS_NOTE_PROGRESS } zs_note_kind;

typedef struct zs_notes {
    void (*note)(void *ctx, zs_note_kind kind, const char *text);
    void *ctx;
} zs_notes;

/* Formats a note and hands it to n; nothing when n is NULL (nobody listens)
 * or there is no memory to format it. */
/* The formatted text in a new heap string; NULL when out of memory. */
char *zs_vformat(const char *fmt, va_list ap);

void zs_note(const zs_notes *n, zs_note_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
