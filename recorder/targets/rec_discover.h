/* SPDX-License-Identifier: BSD-3-Clause */
/* Finds every running zeek (for --all): a process whose executable exports
 * Zeek's interpreter symbols. Each executable is parsed once, in a
 * sandboxed child (rec_inspect.h), and its verdict cached by (device, inode,
 * size, mtime), so a rescan every few seconds costs a readdir and a stat per
 * process, and a rebuilt executable at the same path is judged again. */
#ifndef REC_DISCOVER_H
#define REC_DISCOVER_H

#include <stddef.h>
#include <sys/types.h>

typedef struct rec_discover rec_discover;

rec_discover *rec_discover_new(void);
/* Fills pids with up to max candidate processes (not this one); returns the
 * count. A candidate exports Zeek's symbols, or its executable could not be
 * inspected (the parse crashed, timed out or hit a limit): opening it as a
 * target then refuses it with the reason, once. */
size_t rec_discover_scan(rec_discover *d, pid_t *pids, size_t max);
/* A descriptor that, once readable, gives up the inspection under way. */
void rec_discover_set_cancel(rec_discover *d, int fd);
/* How many executables were parsed so far (each once). */
size_t rec_discover_parsed(const rec_discover *d);
void rec_discover_free(rec_discover *d);

#endif
