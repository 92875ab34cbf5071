/* SPDX-License-Identifier: BSD-3-Clause */
/* --all: finds the zeek processes that appear and inspects each (its
 * executable parsed in the sandbox, its layout checked against its live
 * memory) on a thread of its own, at normal priority and nice 10, so that
 * a slow inspection never holds up sampling: a real Zeek's 320 MB of DWARF
 * takes about 0.65 s to parse, and every target stopped meanwhile would wait
 * for it. Verdicts are cached by executable, so a restarted worker of the
 * same binary is not parsed again. The sampling thread takes each find,
 * seizes it (ptrace's tracer is a thread) and records it. */
#ifndef REC_SCOUT_H
#define REC_SCOUT_H

#include <stdint.h>
#include <sys/types.h>

#include "targets/rec_target.h"
#include "zs_error.h"

typedef struct rec_scout rec_scout;

/* A process the scout found: ready to be seized (ok), or refused (why). */
typedef struct rec_scout_find {
    int ok;
    uint64_t inspect_ns;  /* how long its inspection took  */
    rec_target target; /* pid set in both cases */
    zs_error why;
} rec_scout_find;

/* choice must outlive the scout. */
rec_scout *rec_scout_new(const rec_layout_choice *choice, uint64_t interval_ns, zs_error *err);

/* One scan on the calling thread, before sampling starts. */
void rec_scout_scan_now(rec_scout *sc);

/* Starts the thread: a scan every interval_ns, the first one interval_ns
 * from now. */
int rec_scout_start(rec_scout *sc, zs_error *err);

/* Takes the oldest find into *out: 1, or 0 when none waits. Never blocks
 * for longer than the scout takes to hand one over. */
int rec_scout_next(rec_scout *sc, rec_scout_find *out);

/* Executables parsed, and inspections answered from the cache. */
void rec_scout_counts(const rec_scout *sc, uint64_t *parsed, uint64_t *cached);

/* Stops the thread (an inspection under way is given up) and frees. */
void rec_scout_free(rec_scout *sc);

#endif
