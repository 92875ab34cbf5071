/* SPDX-License-Identifier: BSD-3-Clause */
/* Reads one recording into a resolved, aggregated conv_profile: raw stacks
 * are counted while streaming, then resolved once each against the snapshot
 * image of their process, so work grows with distinct stacks, not samples. */
#ifndef CONV_READ_H
#define CONV_READ_H

#include <stddef.h>
#include <stdint.h>

#include "read/conv_filter.h"
#include "profile/conv_profile.h"
#include "zs_error.h"
#include "zs_reader.h"


typedef struct conv_read_report {
    const zs_notes *notes;  /* in: progress of long reads (NULL: none) */
    int want_timeline;      /* in: keep every sample's time (profile->timeline) */
    int want_lane;          /* in: keep the processes' load (profile->lane) */
    uint64_t samples;       /* samples read (before filtering) */
    int truncated;          /* last zstd frame cut short */
    uint64_t truncated_at;  /* its file offset */
    int has_trailer;
    uint64_t skipped_records;
} conv_read_report;

/* One recording, read once from its first record to its last: the header
 * first (enough for the cache key, so that a cache hit reads no further),
 * then, if still wanted, the rest into a profile. */
typedef struct conv_reading conv_reading;

/* Sees every record before the reading takes it, the header included: a
 * description prints as it reads (see is called with ctx). */
typedef struct conv_read_observer {
    void (*see)(void *ctx, const zs_record *rec);
    void *ctx;
} conv_read_observer;

/* What conv_read_scan counted for one process. */
typedef struct conv_read_process {
    uint32_t pid;
    uint64_t samples;
    int has_nettime;
    double net_first, net_last; /* Zeek's network time at the first and last NETTIME */
} conv_read_process;

/* What conv_read_scan counted in the whole recording. */
typedef struct conv_read_totals {
    uint32_t format_version;
    int64_t start_wall_ns;      /* the header's */
    uint64_t samples, stacks, skipped, torn;
    uint64_t first_us, last_us; /* the first and last sample, from the start */
    int marked;                 /* format 7: samples marked on or off the CPU (BPF) */
    uint64_t off_cpu;           /* of samples, those taken off the CPU (marked only) */
    const conv_read_process *procs; /* in the order they appear; the reading's */
    size_t nprocs;
    const conv_lane *lane;      /* the processes' LOAD records (format 8); the reading's */
} conv_read_totals;

/* How conv_read_open reads, or-ed together. */
enum {
    /* Also make the cache key (the recording id, the file's size and what
     * the profile shows), failing when there is no header. */
    CONV_READ_KEY = 1,
    /* Keep the interpreter's own native frames, which a profile of scripts
     * hides by default: every native frame between the outermost and the
     * innermost script frame of a stack (StmtList::Exec, CallExpr::Eval,
     * ...), and the run of the interpreter's functions directly inside the
     * innermost one (names/conv_interpreter.h), whose time is then the
     * script's. */
    CONV_READ_INTERPRETER_FRAMES = 2,
    /* The profile will be of the on-CPU view (the filter's view is
     * CONV_VIEW_CPU): the key says so, and a recording whose samples are
     * not marked on or off the CPU (the ptrace sampler's, format < 7) is
     * refused right after its header. */
    CONV_READ_CPU_VIEW = 4,
};

/* Opens path and reads its header, as flags (CONV_READ_*) say.
 * NULL with err set on failure. */
conv_reading *conv_read_open(const char *path, unsigned flags, const conv_read_observer *observer,
                             zs_error *err);
/* The recording's format version (from its first bytes). */
uint32_t conv_read_format_version(const conv_reading *r);
/* The cache key; NULL when it was not asked for or cannot be made. */
const char *conv_read_key(const conv_reading *r);
/* Reads the rest of the recording into *out (the caller's to free).
 * report->notes and want_timeline are read; the rest of *report
 * is filled. Once per reading. 0, or -1 with err set: also for the CPU
 * view of a recording without marks, and for a view other than the one the
 * key was made for (CONV_READ_CPU_VIEW). */
int conv_read_profile(conv_reading *r, const conv_filter *filter, conv_profile **out,
                      conv_read_report *report, zs_error *err);
/* Reads the rest of the recording, counting and checking every record as
 * conv_read_profile does, but resolves nothing: for a description. *totals
 * is valid until conv_read_close. 0, or -1 with err set. */
int conv_read_scan(conv_reading *r, conv_read_report *report, conv_read_totals *totals,
                   zs_error *err);

void conv_read_close(conv_reading *r);

/* conv_read_open, conv_read_profile and conv_read_close in one. */
int conv_read_recording(const char *path, const conv_filter *filter, conv_profile **out,
                        conv_read_report *report, zs_error *err);

#endif
