/* SPDX-License-Identifier: BSD-3-Clause */
/* zeek-spy-record --top: a live view of the hottest script functions, next
 * to the recording (py-spy top's idea). The session hands it every sample
 * it writes and gives it a moment whenever no target is held; it counts,
 * and once a second redraws the terminal (or prints a plain snapshot when
 * stdout is not one) and reads keys: q quits. */
#ifndef REC_TOP_H
#define REC_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "sampling/rec_stats.h"
#include "targets/rec_target.h"
#include "zs_error.h"
#include "zs_format.h"

enum { REC_TOP_MAX_WINDOW = 300 }; /* seconds; memory grows with it per function */

typedef struct rec_top rec_top;

/* window_s: the "last N seconds" column. scratch: record into a temporary
 * file that rec_top_free removes (--top without -o). quiet: say nothing. */
rec_top *rec_top_new(unsigned window_s, int scratch, int quiet, zs_error *err);

/* The temporary recording to write, or NULL (no scratch, or t NULL). */
const char *rec_top_scratch_path(const rec_top *t);

/* Sampling starts now: the terminal goes into its --top mode. */
void rec_top_begin(rec_top *t, uint64_t now_ns);

/* One stack (frames outermost first) written weight times. Called after
 * the target was resumed: a (pid, func, stmt) seen for the first time is
 * named here from live memory, once; after that the cost is a hash lookup
 * per frame and no allocation. -1 only when out of memory. */
int rec_top_sample(rec_top *t, const rec_target *target, const zs_frame *frames, size_t n,
                   uint64_t weight, zs_error *err);

/* Called while no target is held: reads keys and, once a second, rolls the
 * window and redraws. 1 when the user asked to quit, 0 otherwise. */
int rec_top_idle(rec_top *t, uint64_t now_ns, const rec_stats *st);

/* Puts the terminal back. Safe to call more than once, and on NULL. */
void rec_top_end(rec_top *t);

/* Ends the terminal mode if still on, removes the scratch recording. */
void rec_top_free(rec_top *t);

#endif
