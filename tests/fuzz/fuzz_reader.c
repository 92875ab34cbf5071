/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: bytes -> zs_reader_open_memory -> every record.
 *
 * The input is either a recording as it would lie on disk (first byte even)
 * or, to reach the record decoder without the fuzzer having to invent zstd,
 * the decompressed stream that the fuzzer's remaining bytes spell out (first
 * byte odd): it is cut into 1..4 parts, each compressed as its own zstd
 * frame, the last one optionally cut short, as a killed recorder leaves it.
 *
 *   byte 0: bit 0 compress, bit 1 cut the last frame, bit 2 prepend the
 *           magic and format version 1
 *   byte 1: number of frames - 1 (low 2 bits), bytes to cut (high 6 bits)
 *
 * Every field of every record is touched, strings with strlen, so that a
 * missing terminator or a length beyond the data shows up under ASan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "zs_format.h"
#include "zs_reader.h"

/* Bounds the work of one input whatever it decodes to. */
enum { MAX_RECORDS = 1 << 20 };

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = h * 31 + b[i];
    sink += h;
}

static void touch_string(const char *s) { touch(s, strlen(s)); }

static void touch_record(const zs_record *rec)
{
    switch (rec->type) {
    case ZS_REC_HEADER:
    case ZS_REC_PROCESS: {
        const zs_kv *kv = rec->type == ZS_REC_HEADER ? rec->header.items : rec->process.items;
        size_t n = rec->type == ZS_REC_HEADER ? rec->header.count : rec->process.count;
        for (size_t i = 0; i < n; i++) {
            touch_string(kv[i].key);
            touch_string(kv[i].value);
        }
        sink += zs_kv_get(kv, n, "layout") != NULL;
        break;
    }
    case ZS_REC_STACK:
        touch(rec->stack.frames, rec->stack.nframes * sizeof(zs_frame));
        sink += rec->stack.id + rec->stack.pid;
        break;
    case ZS_REC_SAMPLE:
        sink += rec->sample.t_us + rec->sample.stack_id + (uint64_t)rec->sample.off_cpu;
        break;
    case ZS_REC_SNAPSHOT:
        touch(rec->snapshot.data, rec->snapshot.len);
        sink += rec->snapshot.addr + rec->snapshot.pid;
        break;
    case ZS_REC_EVENT:
        touch_string(rec->event.message);
        sink += rec->event.t_us + rec->event.kind + rec->event.value;
        break;
    case ZS_REC_TRAILER:
        sink += rec->trailer.samples + rec->trailer.skipped + rec->trailer.t_us;
        break;
    default: /* record types with only fixed-size fields */
        touch(rec, sizeof *rec);
        break;
    }
}

static void read_all(const uint8_t *data, size_t size)
{
    zs_error err = {0};
    zs_reader *r = zs_reader_open_memory(data, size, "fuzz", &err);
    if (!r)
        return;
    zs_record rec;
    int got = 0;
    for (size_t i = 0; i < MAX_RECORDS && (got = zs_reader_next(r, &rec, &err)) > 0; i++)
        touch_record(&rec);
    if (got < 0)
        touch_string(err.detail);
    uint64_t at;
    sink += (uint64_t)zs_reader_truncated(r, &at) + at + zs_reader_format_version(r) +
            zs_reader_skipped_records(r);
    touch_string(zs_reader_name(r));
    zs_reader_close(r);
}

/* Builds the zstd file that the decompressed stream in data describes. */
static uint8_t *compress_parts(const uint8_t *data, size_t size, unsigned flags, unsigned spec,
                               size_t *out_len)
{
    static const uint8_t preamble[] = {'Z', 'S', 'P', 'Y', 'R', 'E', 'C', '\n', 1};
    size_t plain_len = size + ((flags & 4) ? sizeof preamble : 0);
    uint8_t *plain = malloc(plain_len ? plain_len : 1);
    if (!plain)
        return NULL;
    size_t at = 0;
    if (flags & 4) {
        memcpy(plain, preamble, sizeof preamble);
        at = sizeof preamble;
    }
    if (size)
        memcpy(plain + at, data, size);

    size_t parts = (spec & 3) + 1;
    size_t cap = 0;
    for (size_t i = 0; i < parts; i++)
        cap += ZSTD_compressBound(plain_len / parts + parts);
    uint8_t *out = malloc(cap);
    if (!out) {
        free(plain);
        return NULL;
    }
    size_t len = 0, from = 0, last_start = 0;
    for (size_t i = 0; i < parts; i++) {
        size_t to = i + 1 == parts ? plain_len : plain_len * (i + 1) / parts;
        last_start = len;
        size_t n = ZSTD_compress(out + len, cap - len, plain + from, to - from, 1);
        if (ZSTD_isError(n)) {
            free(plain);
            free(out);
            return NULL;
        }
        len += n;
        from = to;
    }
    if (flags & 2) {
        size_t cut = (spec >> 2) + 1;
        size_t last = len - last_start;
        len -= cut < last ? cut : last - 1;
    }
    free(plain);
    *out_len = len;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || !(data[0] & 1)) {
        read_all(data, size);
        return 0;
    }
    size_t len;
    uint8_t *file = compress_parts(data + 2, size - 2, data[0], data[1], &len);
    if (file) {
        read_all(file, len);
        free(file);
    }
    return 0;
}
