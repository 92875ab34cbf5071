/* SPDX-License-Identifier: BSD-3-Clause */
/* Appends records to a recording. Records collect in memory and go to disk
 * at each zs_writer_flush (the recorder flushes every second), compressed
 * into a zstd frame that stays open across flushes and is decodable up to
 * the last one, so a killed recorder loses at most the unflushed part. */
#ifndef ZS_WRITER_H
#define ZS_WRITER_H

#include <stdint.h>
#include <sys/types.h>

#include "zs_error.h"
#include "zs_format.h"

typedef struct zs_writer zs_writer;

/* Creates PATH (never an existing file, never through a symlink), mode 0640.
 * uid/gid >= 0 chowns the file (a recorder run through sudo). */
zs_writer *zs_writer_create(const char *path, uid_t uid, gid_t gid, zs_error *err);

int zs_writer_header(zs_writer *w, const zs_kv *items, size_t count, zs_error *err);
int zs_writer_process(zs_writer *w, uint32_t pid, const zs_kv *items, size_t count, zs_error *err);
int zs_writer_stack(zs_writer *w, uint64_t id, uint32_t pid, const zs_frame *frames, size_t n,
                    zs_error *err);
/* A stack whose first from->shared frames are those of an earlier stack of
 * the same pid (from->base_plus1: its id + 1; 0: none): only the rest is
 * written. frames holds the whole stack. */
int zs_writer_stack_from(zs_writer *w, uint64_t id, uint32_t pid, const zs_stack_base *from,
                         const zs_frame *frames, size_t n, zs_error *err);
/* t_us: microseconds since the recording's start; must not go backwards.
 * off_cpu: taken while the process was off its CPU (a SAMPLES_OFF_CPU
 * record), else on it or, for a sampler that cannot tell, wall-clock (a
 * SAMPLES record). Samples of both kinds share one clock: each one's dt
 * counts from the sample before it, of either kind. */
int zs_writer_sample(zs_writer *w, uint64_t t_us, uint64_t stack_id, int off_cpu, zs_error *err);
/* The time the last sample was written at (never before the one before). */
uint64_t zs_writer_last_t_us(const zs_writer *w);
/* A STACK_WAITS record: the stack's samples wait for their native frames. */
int zs_writer_stack_waits(zs_writer *w, uint64_t stack_id, zs_error *err);
/* A NATIVE_LATE record, after every sample written so far. */
int zs_writer_native_late(zs_writer *w, uint32_t pid, uint64_t t_us, uint64_t stack_id, zs_error *err);
int zs_writer_snapshot(zs_writer *w, uint32_t pid, uint64_t addr, const void *data, size_t len,
                       zs_error *err);
int zs_writer_event(zs_writer *w, uint64_t t_us, uint32_t pid, zs_event_kind kind, uint64_t value,
                    const char *message, zs_error *err);
int zs_writer_symbol(zs_writer *w, uint32_t pid, uint64_t id, const char *name, zs_error *err);
/* A module and a native location (format 3): each once per file, dense ids
 * from 0 per process, a module before the first location in it, a location
 * before the first stack that uses it. */
int zs_writer_module(zs_writer *w, uint32_t pid, const zs_module *m, zs_error *err);
int zs_writer_location(zs_writer *w, uint32_t pid, const zs_native_location *l, zs_error *err);
/* A location's source lines: after the location and its SYMBOLs, once. */
int zs_writer_lines(zs_writer *w, uint32_t pid, const zs_native_lines *l, zs_error *err);
int zs_writer_nettime(zs_writer *w, uint64_t t_us, uint32_t pid, double network_time,
                      zs_error *err);
/* A LOAD record (format 8): the process's packets, lag and queue. */
int zs_writer_load(zs_writer *w, const zs_load *l, zs_error *err);
/* Writes everything buffered, decodable; the frame may stay open. */
int zs_writer_flush(zs_writer *w, zs_error *err);
/* The same, and ends the frame: the next records start a new one. */
int zs_writer_end_frame(zs_writer *w, zs_error *err);
/* Writes the trailer, flushes and closes; frees w even on failure. */
int zs_writer_close(zs_writer *w, uint64_t samples, uint64_t skipped, uint64_t end_t_us,
                    zs_error *err);
/* Closes without a trailer (after a write error); removes the file when
 * nothing was ever written to it. */
void zs_writer_abandon(zs_writer *w);

uint64_t zs_writer_bytes_written(const zs_writer *w);
const char *zs_writer_path(const zs_writer *w);

#endif
