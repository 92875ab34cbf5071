/* SPDX-License-Identifier: BSD-3-Clause */
/* Where samples go: the recording, or with rotation a series of parts, each
 * a complete recording (its own header, process records, stacks and
 * snapshot), so any part converts on its own. Also interns stacks and
 * captures the snapshot of objects first seen. */
#ifndef REC_OUTPUT_H
#define REC_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "targets/rec_target.h"
#include "zs_error.h"
#include "zs_format.h"

typedef struct rec_output_config {
    const char *path;        /* NULL: zeek-spy-HOST-PID-TIME.zspy */
    double rate_hz;
    int nonblocking;
    uint64_t rotate_bytes;   /* 0: no size rotation */
    double rotate_seconds;   /* 0: no time rotation */
    uint64_t max_bytes;      /* 0: no cap; else oldest parts are deleted */
    uid_t uid;               /* owner of the files, (uid_t)-1: ours */
    gid_t gid;
    const char *sampler;     /* the header's sampler (a string that outlives the
                                output): "ptrace" (NULL: it) or "bpf". Only the
                                samples of a sampler other than ptrace are read as
                                marked on or off the CPU (rec_output_sample) */
    int cpu_only;            /* BPF without off-CPU samples: the header says so */
} rec_output_config;

typedef struct rec_output rec_output;

/* start_ns: the session's monotonic start; sample times are relative to it
 * in every part. first_pid names the default file. */
rec_output *rec_output_open(const rec_output_config *c, uint64_t start_ns, pid_t first_pid,
                            zs_error *err);
/* t must live until rec_output_drop_process or close. */
int rec_output_add_process(rec_output *o, const rec_target *t, zs_error *err);
void rec_output_drop_process(rec_output *o, pid_t pid);
/* A native frame's location as the recording keeps it, in plain values:
 * ids are the finder's (dense per process), each name given with its id. */
typedef struct rec_named {
    uint64_t id;
    const char *name;
} rec_named;

typedef struct rec_out_line {
    rec_named function, file;
    uint64_t line;
} rec_out_line;

typedef struct rec_out_location {
    uint64_t id;
    uint64_t address;         /* in the target */
    rec_named symbol;
    const zs_module *module;  /* its id the finder's; NULL: in no module */
    size_t nlines;            /* 0 to ZS_MAX_INLINE */
    rec_out_line lines[ZS_MAX_INLINE]; /* innermost first */
} rec_out_location;

/* What the part's stacks call the native location id (ids are dense per
 * part, in the order first used): 1 with *file_id set when the part has
 * it already, 0 when it must be given with rec_output_native. */
int rec_output_native_known(rec_output *o, pid_t pid, uint64_t id, uint64_t *file_id);
/* Writes a location with its symbol, module and lines (once per part,
 * before the first stack that uses it); *file_id as above. */
int rec_output_native(rec_output *o, pid_t pid, const rec_out_location *l, uint64_t *file_id,
                      zs_error *err);
/* off_cpu: taken while the target was off its CPU (a sampler that tells
 * them apart); 0 for on-CPU and for the ptrace sampler's wall-clock samples.
 * waits: its native frames are to follow (rec_output_native_late); then
 * *written_us (if not NULL) is the time it was written at, which names it. */
int rec_output_sample(rec_output *o, pid_t pid, uint64_t t_us, const zs_frame *frames, size_t n,
                      int off_cpu, int waits, uint64_t *written_us, zs_error *err);
/* The stack, native frames mixed in, of pid's sample written at t_us with
 * waits set (in this part: a sample of a part before it is not found). */
int rec_output_native_late(rec_output *o, pid_t pid, uint64_t t_us, const zs_frame *frames, size_t n,
                           zs_error *err);
int rec_output_event(rec_output *o, uint64_t t_us, pid_t pid, zs_event_kind kind, uint64_t value,
                     const char *message, zs_error *err);
int rec_output_nettime(rec_output *o, uint64_t t_us, pid_t pid, double network_time, zs_error *err);
/* A LOAD record: the process's packets, lag and queue this second. */
int rec_output_load(rec_output *o, const zs_load *l, zs_error *err);
/* Once a second: cut a zstd frame; rotate when due (or asked: switch_now,
 * SIGUSR1) and allowed (not on the last tick, which would leave an empty
 * part). */
int rec_output_tick(rec_output *o, uint64_t now_ns, int may_rotate, int switch_now, zs_error *err);
/* Whether it writes parts (rotation): only then can switch_now start one. */
int rec_output_rotating(const rec_output *o);
/* Each part's trailer counts its own samples and skipped ticks. */
int rec_output_close(rec_output *o, uint64_t end_t_us, zs_error *err);
/* After a failed write: closes without a trailer; the file stays valid. */
void rec_output_abandon(rec_output *o);
/* Abandons it and removes its file: nothing was sampled into it (the
 * start-up failed), so it would only be an empty recording left behind. */
void rec_output_discard(rec_output *o);

const char *rec_output_path(const rec_output *o);  /* the current part */
uint64_t rec_output_bytes(const rec_output *o);    /* all parts, on disk */
size_t rec_output_stacks(const rec_output *o);     /* distinct stacks, current part */
unsigned rec_output_parts(const rec_output *o);

#endif
