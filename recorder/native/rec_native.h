/* SPDX-License-Identifier: BSD-3-Clause */
/* Native frames (--native): what zeek's C++ does under and around the
 * scripts. Inside the stop window only the registers and a copy of the top
 * of the main thread's stack are taken. After the target runs again the
 * copy goes to this process's unwinder, a sandboxed child (rec_unwinder.h):
 * parsing the target's modules is parsing files written by anyone, and the
 * recorder runs as root. The unwinder answers with symbol ids, naming each
 * symbol once, all on the sensor, so the converter needs no zeek binary. */
#ifndef REC_NATIVE_H
#define REC_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "native/rec_mixed.h"
#include "output/rec_output.h"
#include "frames/rec_raw_sample.h"
#include "zs_error.h"

enum {
    REC_NATIVE_MAX_FRAMES = 256,
    /* Location (and symbol) ids of the markers, in no module: */
    REC_NATIVE_TRUNCATED_ID = 0, /* "[truncated]": a stack deeper than the copy */
    REC_NATIVE_FIBER_ID = 1,     /* "[spicy fiber]": a stack that is a fiber's */
};

/* A module (mapped file) of the target, as the unwinder found it. */
typedef struct rec_native_module {
    uint64_t start, end, file_offset;
    char build_id[2 * 64 + 1]; /* hex; "" when it has none */
    char *path;
} rec_native_module;

/* One PC the unwinder met: its symbol, and its module when it has one. */
typedef struct rec_native_location {
    uint64_t address; /* in the target */
    uint32_t module;  /* 0: none, else module id + 1 */
    uint32_t symbol;
    uint32_t line_at, nlines; /* its source lines: nlines from line_at (0: none) */
} rec_native_location;

/* One source line of a location (from the module's DWARF): a function
 * and a file, both name ids, and the line. */
typedef struct rec_native_line {
    uint32_t function, file, line;
} rec_native_line;

/* What rec_native_unwind says of a stack besides its frames. */
enum { REC_NATIVE_TRUNCATED = 1, REC_NATIVE_ON_FIBER = 2 };

typedef struct rec_native rec_native;

/* Starts pid's unwinder and sends it pid's modules. rate_hz: the samples
 * a second it is to expect, each sent as it is taken (sets how long it
 * lets them queue up); 0 when they come batched (the BPF sampler's polls):
 * it then waits for the next message only, one wake-up a batch. */
rec_native *rec_native_new(pid_t pid, unsigned rate_hz, zs_error *err);
unsigned rec_native_batch_ms(unsigned rate_hz);
/* A launched zeek's loader maps its libraries after the unwinder has read
 * the modules: unwinds asked for before an answer says "outside the
 * modules" (and a refresh follows) would all stop at the first library
 * frame. For this long after rec_native_new, the caller looks before it
 * submits captures (at most every REC_NATIVE_FOLLOW_EVERY_NS: a look reads
 * /proc/PID/maps): when the files mapped have changed, the unwinder is
 * told (before the captures that follow). 1 when it was. */
#define REC_NATIVE_FOLLOW_MODULES_NS 3000000000ULL
#define REC_NATIVE_FOLLOW_EVERY_NS 20000000ULL
int rec_native_follow_modules(rec_native *n, uint64_t now_ns);
void rec_native_free(rec_native *n);
/* Registers and a stack copy in each window like rec_native_new's, with no
 * unwinder: for ZAM's instruction (rec_zam.h) without native frames. NULL
 * on no memory. */
rec_native *rec_native_copier(pid_t pid);
int rec_native_is_copier(const rec_native *n);


/* What the unwinds so far say of the stack, for sizing the next copy. */
void rec_native_stack_plan(const rec_native *n, rec_stack_plan *plan);

/* After the target resumed: hands the capture to the unwinder, which works
 * on it while the recorder goes on sampling (an unwind that delayed the next
 * tick would sample the moments after each sample late, and so unevenly).
 * The captures go out together at the next rec_native_flush (or collect):
 * one system call for a poll's samples. 0; -2 when the unwinder is behind
 * (this sample goes without); -1 when it is gone. */
int rec_native_submit(rec_native *n, const rec_raw_native *copy);
/* Sends the captures submitted so far, as far as the socket has room: 0,
 * -2 when some still wait (sent at the next flush), -1 when the unwinder
 * is gone. */
int rec_native_flush(rec_native *n);

enum { REC_NATIVE_NOT_YET = -2 };
/* rec_native_collect's wait: for as long as the unwinder has to answer. */
#define REC_NATIVE_WAIT UINT64_MAX

/* The answer to the oldest submitted capture: its frames, OUTERMOST first,
 * as location ids with their interpreter-entry flag (rec_mixed_is_entry).
 * *marks: REC_NATIVE_TRUNCATED when the unwind ran off the copy before the
 * outermost frame; REC_NATIVE_ON_FIBER when the stack is a Spicy fiber's
 * (the frames then start at the fiber's entry). Returns the count (0: the
 * unwind found nothing), REC_NATIVE_NOT_YET when it is not there by
 * wait_until_ns (0: now), -1 when the unwinder is gone or took 3 s
 * (rec_native_broken says why; REC_NATIVE_WAIT waits that long). */
ssize_t rec_native_collect(rec_native *n, rec_mixed_native *frames, size_t max, unsigned *marks,
                           uint64_t wait_until_ns);

/* The (mangled) name of a location's symbol id:
 * "[module]" (e.g. "[vdso]") when no symbol covers it, "[unknown]" when no module
 * does, and the markers' names for REC_NATIVE_TRUNCATED_ID and
 * REC_NATIVE_FIBER_ID. */
const char *rec_native_name(const rec_native *n, uint64_t id);

/* A location id rec_native_collect returned, and a module id of a
 * location; NULL for an id it never gave. */
const rec_native_location *rec_native_location_of(const rec_native *n, uint64_t id);
/* Location id as the recording's plain record (its module in *module);
 * 0 for an id the unwinder did not announce. */
int rec_native_describe(const rec_native *n, uint64_t id, rec_out_location *out, zs_module *module);
const rec_native_module *rec_native_module_of(const rec_native *n, uint64_t id);
/* A location's source lines, innermost first (l->nlines of them). */
const rec_native_line *rec_native_lines_of(const rec_native *n, const rec_native_location *l);

/* Why the unwinder is gone (it crashed, hung or answered out of bounds),
 * or NULL while it works. */
const char *rec_native_broken(const rec_native *n);

/* The sampling loop collected the exit of a child that is not a target:
 * if it was n's unwinder, n forgets its pid (never to signal a pid that
 * may be reused). */
void rec_native_reaped(rec_native *n, pid_t pid);

/* The unwinder's pid (its CPU is the recorder's too), or 0 when it is
 * gone or there is none. */
pid_t rec_native_unwinder(const rec_native *n);

/* Unwinds cut short by the copy's end, for the end report. */
uint64_t rec_native_truncated(const rec_native *n);

/* Unwinds that needed libdwfl's general path (rec_cfi.h), for the end
 * report. */
uint64_t rec_native_general(const rec_native *n);


#endif
