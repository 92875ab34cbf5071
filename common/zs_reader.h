/* SPDX-License-Identifier: BSD-3-Clause */
/* Streams the records of one recording, a zstd frame at a time: memory use
 * is bounded by the largest frame, whatever the recording's length. */
#ifndef ZS_READER_H
#define ZS_READER_H

#include <stdint.h>

#include "zs_error.h"
#include "zs_format.h"

typedef struct zs_reader zs_reader;

/* The reader hands a SAMPLES or (format 7) SAMPLES_OFF_CPU batch out as one
 * record per sample, of type ZS_REC_SAMPLE, off_cpu saying which. */
#define ZS_REC_SAMPLE ZS_REC_SAMPLES

typedef struct zs_record {
    zs_record_type type;
    uint64_t offset; /* byte offset in the file of the zstd frame holding it */
    union {
        struct { const zs_kv *items; size_t count; } header;
        struct { uint32_t pid; const zs_kv *items; size_t count; } process;
        struct { uint64_t id; uint32_t pid; size_t nframes; const zs_frame *frames; } stack;
        struct {
            uint64_t t_us;     /* since start */
            uint64_t stack_id;
            int off_cpu;       /* format 7: from a SAMPLES_OFF_CPU batch (taken while
                                  the process was off its CPU); always 0 before */
        } sample;
        struct { uint32_t pid; uint64_t addr; size_t len; const uint8_t *data; } snapshot;
        struct { uint64_t t_us; uint32_t pid; uint32_t kind; uint64_t value; const char *message; } event;
        struct { uint64_t samples; uint64_t skipped; uint64_t t_us; } trailer;
        struct { uint64_t t_us; uint32_t pid; double network_time; } nettime;
        struct { uint32_t pid; uint64_t id; const char *name; } symbol;
        struct { uint32_t pid; zs_module m; } module;            /* checked: ids in order, */
        struct { uint32_t pid; zs_native_location l; } location; /* start < end, bounds */
        struct { uint32_t pid; const zs_native_lines *l; } lines; /* of a location before
                                                                     it; n, lines bounded */
        struct { uint64_t stack_id; } stack_waits;
        struct { uint32_t pid; uint64_t t_us; uint64_t stack_id; } native_late;
        zs_load load;
    };
} zs_record;

zs_reader *zs_reader_open(const char *path, zs_error *err);
/* From memory (fuzzing, tests). The data must outlive the reader. */
zs_reader *zs_reader_open_memory(const void *data, size_t len, const char *name, zs_error *err);

/* 1: a record (valid until the next call), 0: end of recording, -1: error.
 * The first record is always the header. */
int zs_reader_next(zs_reader *r, zs_record *rec, zs_error *err);

/* After the end: whether the last frame was cut short, and where it began. */
int zs_reader_truncated(const zs_reader *r, uint64_t *frame_offset);
uint32_t zs_reader_format_version(const zs_reader *r);
uint64_t zs_reader_skipped_records(const zs_reader *r);
const char *zs_reader_name(const zs_reader *r);
void zs_reader_close(zs_reader *r);

#endif
