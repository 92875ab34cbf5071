/* SPDX-License-Identifier: BSD-3-Clause */
/* One recording session: attach to (or launch) the targets, sample them on
 * the clock until told to stop, the duration ends or every target exited,
 * and leave every target running and untraced. */
#ifndef REC_SESSION_H
#define REC_SESSION_H

#include <stddef.h>
#include <sys/types.h>

#include "targets/rec_target.h"
#include "zs_error.h"

struct rec_bpf;

/* Which sampler takes the samples (--sampler). */
typedef enum rec_sampler_kind {
    REC_SAMPLER_PTRACE = 0, /* stops zeek for each sample */
    REC_SAMPLER_BPF,        /* in the kernel, without stopping zeek */
    REC_SAMPLER_AUTO,       /* BPF where it can run, else ptrace */
} rec_sampler_kind;

typedef struct rec_options {
    pid_t *pids;
    size_t npids;
    char **command;          /* launch mode: argv of the command, NULL-terminated */
    int all;                 /* every zeek, including ones that start later */
    double scan_every_s;     /* --all: how often to look for new ones (0: the default) */
    const char *output;      /* NULL: zeek-spy-HOST-PID-TIME.zspy */
    uint64_t rotate_bytes;   /* start a new part at this size (0: never) */
    double rotate_seconds;   /* start a new part after this long (0: never) */
    uint64_t max_bytes;      /* delete the oldest parts beyond this total (0: no cap) */
    double rate_hz;
    double duration_s;       /* 0: until stopped */
    double stats_interval_s; /* 0: no periodic stats */
    int nonblocking;
    int no_realtime;         /* stay at normal priority (else SCHED_FIFO where permitted) */
    int native;              /* also record native frames (blocking mode) */
    int no_follow_cpu;       /* stay put instead of sampling from each target's CPU */
    int quiet;
    int verbose;
    int top;                 /* --top: a live view of the hottest functions */
    unsigned top_window_s;   /* its "last N seconds" */
    rec_layout_choice layout;
    rec_sampler_kind sampler;
    int cpu_only;            /* --cpu-only: BPF ticks only, no off-CPU samples */
    struct rec_bpf *bpf;     /* the BPF sampler, loaded (rec_sampler_choose), or NULL */
} rec_options;

/* Loads the BPF sampler for --sampler bpf or auto (o->bpf). bpf where it
 * cannot run: -1 with the reason; auto: ptrace, with the reason in note
 * (else note is ""). */
int rec_sampler_choose(rec_options *o, char *note, size_t note_len, zs_error *err);
void rec_sampler_release(rec_options *o);

/* Expects rec_signals_install() to have run. */
int rec_session_run(const rec_options *o, zs_error *err);

#endif
