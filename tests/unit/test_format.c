/* SPDX-License-Identifier: BSD-3-Clause */
/* The recording format: every record type written by zs_writer comes back
 * unchanged from zs_reader, from a file and from memory, in one frame or one
 * frame per record; and every kind of bad input gives its own error naming
 * the file and the offset of the zstd frame at fault. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "zs_codec.h"
#include "zs_format.h"
#include "zs_reader.h"
#include "zs_writer.h"

static char tmpdir[] = "/tmp/zs-test-format-XXXXXX";

static char *tmp_path(const char *name)
{
    static char paths[64][512];
    static int next;
    char *p = paths[next++ % 64];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    unlink(p);
    return p;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
}

/* One zstd frame holding exactly these decompressed bytes. */
static uint8_t *zstd_frame(const void *raw, size_t n, size_t *out_len)
{
    size_t bound = ZSTD_compressBound(n);
    uint8_t *out = malloc(bound);
    *out_len = ZSTD_compress(out, bound, raw, n, 3);
    if (ZSTD_isError(*out_len))
        abort();
    return out;
}

/* ---- what was written, to compare with what is read -------------------- */

typedef struct expected {
    zs_record_type type;
    uint64_t frame_offset; /* set when written one frame per record */
    uint64_t a, b, c;      /* per type: see add_* */
    uint32_t pid;
    const zs_kv *kv;
    size_t nkv;
    const zs_frame *frames;
    size_t nframes;
    const uint8_t *bytes;
    size_t len;
    const char *message;
    const zs_module *mod;
    const zs_native_location *loc;
    const zs_native_lines *lines;
    const zs_load *load;
} expected;

enum { MAX_EXPECTED = 64 };

typedef struct script {
    expected e[MAX_EXPECTED];
    size_t n;
} script;

static const zs_kv header_kv[] = {
    {"recorder_version", "0.1.0"},
    {"host", "sensor-1.example.org"},
    {"start_wall_ns", "1700000000123456789"},
    {"rate_hz", "250"},
    {"recording_id", "00112233445566778899aabbccddeeff"},
    {"empty", ""},
    {"utf8", "caf\xc3\xa9 \xe2\x9c\x93"},
};

static zs_kv process_kv[ZS_MAX_KV];
static char process_kv_text[ZS_MAX_KV][2][32];
static zs_frame deep_frames[ZS_MAX_FRAMES];
static uint8_t big_snapshot[ZS_MAX_SNAPSHOT_BYTES];

static const zs_frame some_frames[] = {
    {0x55d4c3a10040, 0x55d4c3a20080},
    {ZS_FRAME_FIRST_MAX, 0xffffffffffffffffULL}, /* the largest a format-4 frame holds */
    {0, ZS_FRAME_FIRST_MAX},
    {1, 127},
    {128, 16383},
};

static void fill_fixtures(void)
{
    for (int i = 0; i < ZS_MAX_KV; i++) {
        snprintf(process_kv_text[i][0], 32, "key%d", i);
        snprintf(process_kv_text[i][1], 32, "value %d", i * 7);
        process_kv[i] = (zs_kv){process_kv_text[i][0], process_kv_text[i][1]};
    }
    process_kv[0] = (zs_kv){"layout", "model = frame-stack\nobj_location = 8\n# comment\n"};
    for (int i = 0; i < ZS_MAX_FRAMES; i++)
        deep_frames[i] = (zs_frame){0x7f0000000000ULL + (uint64_t)i * 112, (uint64_t)i << 33};
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < sizeof big_snapshot; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        big_snapshot[i] = (uint8_t)x;
    }
}

/* Writes one of every record type (several of some); fills s. After each
 * record, flushes when every_record is set. */
static int write_script(const char *path, int every_record, script *s)
{
    zs_error err = {0};
    zs_writer *w = zs_writer_create(path, (uid_t)-1, (gid_t)-1, &err);
    if (!w)
        return -1;
    s->n = 0;
    int rc = 0;
#define ADD(...)                                                                   \
    do {                                                                           \
        expected *e = &s->e[s->n++];                                               \
        *e = (expected){__VA_ARGS__};                                              \
        e->frame_offset = zs_writer_bytes_written(w);                              \
    } while (0)
#define STEP(call)                                                                 \
    do {                                                                           \
        rc |= (call);                                                              \
        if (every_record)                                                          \
            rc |= zs_writer_end_frame(w, &err);                                        \
    } while (0)

    size_t nh = sizeof header_kv / sizeof header_kv[0];
    ADD(.type = ZS_REC_HEADER, .kv = header_kv, .nkv = nh);
    STEP(zs_writer_header(w, header_kv, nh, &err));
    ADD(.type = ZS_REC_PROCESS, .pid = 4242, .kv = process_kv, .nkv = ZS_MAX_KV);
    STEP(zs_writer_process(w, 4242, process_kv, ZS_MAX_KV, &err));
    ADD(.type = ZS_REC_PROCESS, .pid = UINT32_MAX, .kv = process_kv, .nkv = 0);
    STEP(zs_writer_process(w, UINT32_MAX, process_kv, 0, &err));
    ADD(.type = ZS_REC_STACK, .a = 0, .pid = 4242, .frames = NULL, .nframes = 0);
    STEP(zs_writer_stack(w, 0, 4242, NULL, 0, &err));
    ADD(.type = ZS_REC_STACK, .a = 1, .pid = 4242, .frames = some_frames, .nframes = 5);
    STEP(zs_writer_stack(w, 1, 4242, some_frames, 5, &err));
    ADD(.type = ZS_REC_STACK, .a = (1ULL << 40) + 3, .pid = 7, .frames = deep_frames,
        .nframes = ZS_MAX_FRAMES);
    STEP(zs_writer_stack(w, (1ULL << 40) + 3, 7, deep_frames, ZS_MAX_FRAMES, &err));

    /* t_us is stored as a delta from the previous sample: equal times,
     * big jumps and a time that goes backwards (clamped, never negative).
     * Format 7: on- and off-CPU samples (third column) in runs and alone,
     * on one clock: each kind's batch is cut by the other. */
    static const uint64_t times[][3] = {
        {0, 0, 0}, {4000, 4000, 1}, {4000, 4000, 1}, {4001, 4001, 0}, {1ULL << 40, 1ULL << 40, 1},
        {5, 1ULL << 40, 0}, {(1ULL << 40) + 127, (1ULL << 40) + 127, 0},
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        ADD(.type = ZS_REC_SAMPLE, .a = times[i][1], .b = i * 129, .c = times[i][2]);
        STEP(zs_writer_sample(w, times[i][0], i * 129, (int)times[i][2], &err));
    }
    /* Samples wait in the writer as one SAMPLES batch until a flush: flush
     * so that they come out before the records that follow. */
    rc |= zs_writer_end_frame(w, &err);

    ADD(.type = ZS_REC_SNAPSHOT, .pid = 4242, .a = 0x55d4c3a10040, .bytes = big_snapshot, .len = 0);
    STEP(zs_writer_snapshot(w, 4242, 0x55d4c3a10040, big_snapshot, 0, &err));
    ADD(.type = ZS_REC_SNAPSHOT, .pid = 4242, .a = 0xffffffffffffff00ULL, .bytes = big_snapshot + 5,
        .len = 200);
    STEP(zs_writer_snapshot(w, 4242, 0xffffffffffffff00ULL, big_snapshot + 5, 200, &err));
    ADD(.type = ZS_REC_SNAPSHOT, .pid = 1, .a = 4096, .bytes = big_snapshot,
        .len = ZS_MAX_SNAPSHOT_BYTES);
    STEP(zs_writer_snapshot(w, 1, 4096, big_snapshot, ZS_MAX_SNAPSHOT_BYTES, &err));

    ADD(.type = ZS_REC_EVENT, .a = 17, .pid = 4242, .b = ZS_EV_ATTACHED, .c = 0, .message = "");
    STEP(zs_writer_event(w, 17, 4242, ZS_EV_ATTACHED, 0, NULL, &err));
    ADD(.type = ZS_REC_EVENT, .a = 1ULL << 40, .pid = 0, .b = ZS_EV_SKIPPED, .c = UINT64_MAX,
        .message = "lag: the recorder was not scheduled");
    STEP(zs_writer_event(w, 1ULL << 40, 0, ZS_EV_SKIPPED, UINT64_MAX,
                         "lag: the recorder was not scheduled", &err));
    ADD(.type = ZS_REC_EVENT, .a = 99, .pid = 4242, .b = ZS_EV_TARGET_EXITED, .c = 9 << 8,
        .message = "target exited with status 9");
    STEP(zs_writer_event(w, 99, 4242, ZS_EV_TARGET_EXITED, 9 << 8, "target exited with status 9",
                         &err));

    /* Zeek's network time, a double with a fraction (c / 4 exactly). */
    ADD(.type = ZS_REC_NETTIME, .a = 1000000, .pid = 4242, .c = 6800000000001ULL);
    STEP(zs_writer_nettime(w, 1000000, 4242, 6800000000001.0 / 4, &err));

    /* Zeek's load (format 8): everything, and only some of it. */
    static const zs_load loads[] = {
        {2000000, 4242, ZS_LOAD__ALL, 1ULL << 40, 17, 1ULL << 41, 1ULL << 50, 2500000, 212992},
        {3000000, 4243, ZS_LOAD_COUNTERS, 5, 0, 0, 300, 0, 0},
        {3000001, 4243, ZS_LOAD_QUEUE, 0, 0, 0, 0, 0, 4096},
    };
    for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
        ADD(.type = ZS_REC_LOAD, .load = &loads[i]);
        STEP(zs_writer_load(w, &loads[i], &err));
    }

    /* A native function's name (format 2). */
    ADD(.type = ZS_REC_SYMBOL, .pid = 4242, .a = 70000, .message = "_ZN4zeek8EventMgr5DrainEv");
    STEP(zs_writer_symbol(w, 4242, 70000, "_ZN4zeek8EventMgr5DrainEv", &err));

    /* Modules and native locations (format 3): ids dense per process. */
    static const zs_module mods[] = {
        {0, "2f1e0c9a", "/usr/local/zeek/bin/zeek", 0x55d4c3a00000, 0x55d4c5000000, 0},
        {1, "", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000028000, 0x7f00001b0000, 0x28000},
    };
    static const zs_native_location locs[] = {
        {0, 0, 0, 0},                  /* a marker: no module */
        {1, 1, 0x1234, 70000},         /* in the zeek executable */
        {2, 2, 0x187fff, 3},           /* the last byte of libc's range */
    };
    for (size_t i = 0; i < 2; i++) {
        ADD(.type = ZS_REC_MODULE, .pid = 4242, .mod = &mods[i]);
        STEP(zs_writer_module(w, 4242, &mods[i], &err));
    }
    for (size_t i = 0; i < 3; i++) {
        ADD(.type = ZS_REC_LOCATION, .pid = 4242, .loc = &locs[i]);
        STEP(zs_writer_location(w, 4242, &locs[i], &err));
    }
    /* Source lines of a location: an inlined function, then its caller
     * (the symbol's function); function and file are SYMBOL ids. */
    static const zs_native_lines lines = {1, 2, {{70001, 70002, 97}, {70000, 70002, (1 << 24)}}};
    ADD(.type = ZS_REC_LINES, .pid = 4242, .lines = &lines);
    STEP(zs_writer_lines(w, 4242, &lines, &err));
    /* A stack whose samples wait for their native frames, and a sample's
     * native frames that follow it. */
    ADD(.type = ZS_REC_STACK_WAITS, .a = 1);
    STEP(zs_writer_stack_waits(w, 1, &err));
    ADD(.type = ZS_REC_NATIVE_LATE, .pid = 4242, .a = 1ULL << 40, .b = (1ULL << 40) + 3);
    STEP(zs_writer_native_late(w, 4242, 1ULL << 40, (1ULL << 40) + 3, &err));
    /* Another process counts its ids from 0. */
    ADD(.type = ZS_REC_MODULE, .pid = 7, .mod = &mods[0]);
    STEP(zs_writer_module(w, 7, &mods[0], &err));

    ADD(.type = ZS_REC_TRAILER, .a = 7, .b = 3, .c = (1ULL << 40) + 127);
    rc |= zs_writer_close(w, 7, 3, (1ULL << 40) + 127, &err);
#undef ADD
#undef STEP
    if (rc)
        fprintf(stderr, "write_script: %s\n", err.detail);
    return rc;
}

static int same_kv(const zs_kv *a, size_t na, const zs_kv *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].key, b[i].key) || strcmp(a[i].value, b[i].value))
            return 0;
    return 1;
}

static int matches(const zs_record *r, const expected *e)
{
    if (r->type != e->type)
        return 0;
    switch (e->type) {
    case ZS_REC_HEADER:
        return same_kv(r->header.items, r->header.count, e->kv, e->nkv);
    case ZS_REC_PROCESS:
        return r->process.pid == e->pid && same_kv(r->process.items, r->process.count, e->kv, e->nkv);
    case ZS_REC_STACK:
        return r->stack.id == e->a && r->stack.pid == e->pid && r->stack.nframes == e->nframes &&
               (!e->nframes || !memcmp(r->stack.frames, e->frames, e->nframes * sizeof(zs_frame)));
    case ZS_REC_SAMPLE:
        return r->sample.t_us == e->a && r->sample.stack_id == e->b &&
               r->sample.off_cpu == (int)e->c;
    case ZS_REC_SNAPSHOT:
        return r->snapshot.pid == e->pid && r->snapshot.addr == e->a && r->snapshot.len == e->len &&
               (!e->len || !memcmp(r->snapshot.data, e->bytes, e->len));
    case ZS_REC_EVENT:
        return r->event.t_us == e->a && r->event.pid == e->pid && r->event.kind == e->b &&
               r->event.value == e->c && !strcmp(r->event.message, e->message);
    case ZS_REC_TRAILER:
        return r->trailer.samples == e->a && r->trailer.skipped == e->b && r->trailer.t_us == e->c;
    case ZS_REC_NETTIME:
        return r->nettime.t_us == e->a && r->nettime.pid == e->pid &&
               r->nettime.network_time == (double)e->c / 4;
    case ZS_REC_SYMBOL:
        return r->symbol.pid == e->pid && r->symbol.id == e->a && !strcmp(r->symbol.name, e->message);
    case ZS_REC_MODULE: {
        const zs_module *m = &r->module.m;
        return r->module.pid == e->pid && m->id == e->mod->id && !strcmp(m->build_id, e->mod->build_id) &&
               !strcmp(m->path, e->mod->path) && m->start == e->mod->start && m->end == e->mod->end &&
               m->file_offset == e->mod->file_offset;
    }
    case ZS_REC_LOCATION:
        return r->location.pid == e->pid && !memcmp(&r->location.l, e->loc, sizeof *e->loc);
    case ZS_REC_SAMPLES_OFF_CPU: /* handed out as ZS_REC_SAMPLE */
        return 0;
    case ZS_REC_STACK_WAITS:
        return r->stack_waits.stack_id == e->a;
    case ZS_REC_LOAD:
        return !memcmp(&r->load, e->load, sizeof *e->load);
    case ZS_REC_NATIVE_LATE:
        return r->native_late.pid == e->pid && r->native_late.t_us == e->a &&
               r->native_late.stack_id == e->b;
    case ZS_REC_LINES:
        return r->lines.pid == e->pid && r->lines.l->location == e->lines->location &&
               r->lines.l->n == e->lines->n &&
               !memcmp(r->lines.l->line, e->lines->line, e->lines->n * sizeof *e->lines->line);
    }
    return 0;
}

/* Reads everything from r and checks it against s; returns records read. */
static size_t check_against(zs_reader *r, const script *s, int check_offsets)
{
    zs_record rec;
    zs_error err = {0};
    size_t i = 0;
    int got;
    while ((got = zs_reader_next(r, &rec, &err)) > 0) {
        CHECK(i < s->n);
        if (i >= s->n)
            break;
        if (!matches(&rec, &s->e[i]))
            fprintf(stderr, "record %zu (type %d) differs\n", i, (int)s->e[i].type);
        CHECK(matches(&rec, &s->e[i]));
        if (check_offsets)
            CHECK(rec.offset == s->e[i].frame_offset);
        i++;
    }
    if (got < 0)
        fprintf(stderr, "unexpected error: %s\n", err.detail);
    CHECK(got == 0);
    return i;
}

static void test_round_trip(void)
{
    script s;
    const char *path = tmp_path("one-frame.zspy");
    CHECK(write_script(path, 0, &s) == 0);

    zs_error err = {0};
    zs_reader *r = zs_reader_open(path, &err);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK(check_against(r, &s, 0) == s.n);
    CHECK(zs_reader_format_version(r) == ZS_FORMAT_VERSION);
    CHECK(!zs_reader_truncated(r, NULL));
    CHECK(zs_reader_skipped_records(r) == 0);
    CHECK(!strcmp(zs_reader_name(r), path));
    /* After the end, the end again. */
    zs_record rec;
    CHECK(zs_reader_next(r, &rec, &err) == 0);
    zs_reader_close(r);

    /* The same bytes from memory. */
    size_t len;
    uint8_t *data = read_file(path, &len);
    r = zs_reader_open_memory(data, len, "mem", &err);
    CHECK(r != NULL);
    if (r) {
        CHECK(check_against(r, &s, 0) == s.n);
        zs_reader_close(r);
    }
    free(data);
}

/* One zstd frame per record, as a recorder that flushes often writes: each
 * record reports the offset of its own frame, and `zstd -dc` sees as many
 * frames as were flushed. */
static void test_many_frames(void)
{
    script s;
    const char *path = tmp_path("many-frames.zspy");
    CHECK(write_script(path, 1, &s) == 0);

    size_t len, frames = 0;
    uint8_t *data = read_file(path, &len);
    for (size_t at = 0; at < len; frames++) {
        size_t n = ZSTD_findFrameCompressedSize(data + at, len - at);
        CHECK(!ZSTD_isError(n));
        if (ZSTD_isError(n))
            break;
        at += n;
    }
    CHECK(frames == s.n);

    zs_error err = {0};
    zs_reader *r = zs_reader_open(path, &err);
    CHECK(r != NULL);
    if (r) {
        CHECK(check_against(r, &s, 1) == s.n);
        CHECK(!zs_reader_truncated(r, NULL));
        zs_reader_close(r);
    }
    r = zs_reader_open_memory(data, len, "mem", &err);
    if (r) {
        CHECK(check_against(r, &s, 1) == s.n);
        zs_reader_close(r);
    }
    free(data);

    /* A recording far longer than the reader's input buffer: thousands of
     * small frames, read as a stream. */
    path = tmp_path("long.zspy");
    zs_writer *w = zs_writer_create(path, (uid_t)-1, (gid_t)-1, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(zs_writer_header(w, header_kv, 2, &err) == 0);
    CHECK(zs_writer_stack(w, 0, 1, some_frames, 5, &err) == 0);
    enum { N = 200000 };
    for (uint64_t i = 0; i < N; i++) {
        zs_writer_sample(w, i * 4000 + i % 7, 0, 0, &err);
        if (i % 50 == 49)
            zs_writer_end_frame(w, &err);
    }
    CHECK(zs_writer_close(w, N, 0, 0, &err) == 0);
    r = zs_reader_open(path, &err);
    CHECK(r != NULL);
    if (!r)
        return;
    zs_record rec;
    uint64_t n = 0, bad = 0, last_offset = 0;
    int got;
    while ((got = zs_reader_next(r, &rec, &err)) > 0) {
        if (rec.type != ZS_REC_SAMPLE)
            continue;
        bad += rec.sample.t_us != n * 4000 + n % 7 || rec.offset < last_offset;
        last_offset = rec.offset;
        n++;
    }
    CHECK(got == 0);
    CHECK(n == N);
    CHECK(bad == 0);
    CHECK(last_offset > 100000);
    zs_reader_close(r);
}

static void test_writer_limits(void)
{
    zs_error err = {0};
    const char *path = tmp_path("limits.zspy");
    zs_writer *w = zs_writer_create(path, (uid_t)-1, (gid_t)-1, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(zs_writer_snapshot(w, 1, 0, big_snapshot, ZS_MAX_SNAPSHOT_BYTES + 1, &err) == -1);
    /* The target's object is absurd; nobody used the command wrongly. */
    CHECK(err.code == ZS_E_TARGET);
    CHECK(!strcmp(zs_writer_path(w), path));
    /* A Func or location id beyond what a format-4 frame holds: refused,
     * the record not begun. */
    const zs_frame too_big[] = {{ZS_FRAME_FIRST_MAX + 1, 0}, {0, ZS_FRAME_FIRST_MAX + 1}};
    for (size_t i = 0; i < 2; i++) {
        err.code = ZS_OK;
        CHECK(zs_writer_stack(w, 1, 1, &too_big[i], 1, &err) == -1);
        CHECK(err.code == ZS_E_TARGET && strstr(err.detail, "out of range") != NULL);
    }
    /* A flushed file stays when abandoned (one never written to goes). */
    CHECK(zs_writer_end_frame(w, &err) == 0);
    zs_writer_abandon(w);

    /* Never overwrites. */
    err.code = ZS_OK;
    CHECK(zs_writer_create(path, (uid_t)-1, (gid_t)-1, &err) == NULL);
    CHECK(err.code == ZS_E_OUTPUT);
    CHECK(strstr(err.detail, path) != NULL);
}

/* Expects opening or reading to fail with code and a message naming name
 * and containing want (when not NULL). */
static void expect_failure(const char *what, zs_reader *r, const zs_error *open_err, zs_code code,
                           const char *name, const char *want, size_t *records_before)
{
    zs_error err = *open_err;
    size_t n = 0;
    if (r) {
        zs_record rec;
        int got;
        while ((got = zs_reader_next(r, &rec, &err)) > 0)
            n++;
        if (got == 0)
            fprintf(stderr, "%s: read to the end without an error\n", what);
        CHECK(got < 0);
        zs_reader_close(r);
    }
    if (err.code != code || !strstr(err.detail, name) || (want && !strstr(err.detail, want)))
        fprintf(stderr, "%s: got code %d '%s'\n", what, (int)err.code, err.detail);
    CHECK(err.code == code);
    CHECK(strstr(err.detail, name) != NULL);
    if (want)
        CHECK(strstr(err.detail, want) != NULL);
    if (records_before)
        *records_before = n;
}

static zs_reader *open_file(const char *path, zs_error *err)
{
    memset(err, 0, sizeof *err);
    return zs_reader_open(path, err);
}

/* The decompressed preamble: magic and format version. */
static size_t preamble(zs_buf *b, uint64_t version)
{
    zs_buf_reserve(b, 64);
    zs_put_bytes(b, ZS_MAGIC, ZS_MAGIC_LEN);
    zs_put_varint(b, version);
    return b->len;
}

static void put_record(zs_buf *b, uint8_t type, const void *payload, size_t len)
{
    zs_buf_reserve(b, len + 16);
    zs_put_u8(b, type);
    zs_put_varint(b, len);
    zs_put_bytes(b, payload, len);
}

static void put_empty_header(zs_buf *b)
{
    static const uint8_t no_pairs[] = {0};
    put_record(b, ZS_REC_HEADER, no_pairs, 1);
}

static void test_not_a_recording(void)
{
    zs_error err;
    zs_reader *r;

    const char *empty = tmp_path("empty.zspy");
    write_file(empty, "", 0);
    r = open_file(empty, &err);
    expect_failure("empty file", r, &err, ZS_E_NOT_RECORDING, empty, "empty", NULL);
    memset(&err, 0, sizeof err);
    r = zs_reader_open_memory("", 0, "empty-mem", &err);
    expect_failure("empty memory", r, &err, ZS_E_NOT_RECORDING, "empty-mem", NULL, NULL);

    const char *text = tmp_path("hostname.zspy");
    write_file(text, "sensor-1\n", 9);
    r = open_file(text, &err);
    expect_failure("text file", r, &err, ZS_E_NOT_RECORDING, text, "offset 0", NULL);
    const char *tiny = tmp_path("tiny.zspy");
    write_file(tiny, "\x28\xb5", 2);
    r = open_file(tiny, &err);
    expect_failure("two bytes", r, &err, ZS_E_NOT_RECORDING, tiny, "offset 0", NULL);

    const char *missing = tmp_path("does-not-exist.zspy");
    r = open_file(missing, &err);
    CHECK(r == NULL);
    CHECK(err.code == ZS_E_IO);
    CHECK(strstr(err.detail, missing) != NULL);

    /* A valid zstd frame of something else. */
    static const char other[] = "NOTSPY!\n\x01 plain text compressed with zstd";
    size_t n;
    uint8_t *z = zstd_frame(other, sizeof other - 1, &n);
    const char *magic = tmp_path("wrong-magic.zspy");
    write_file(magic, z, n);
    r = open_file(magic, &err);
    CHECK(r != NULL);
    expect_failure("wrong magic", r, &err, ZS_E_NOT_RECORDING, magic, "offset 0", NULL);
    free(z);

    /* Shorter than the magic. */
    z = zstd_frame("ZSPY", 4, &n);
    r = zs_reader_open_memory(z, n, "short-magic", &err);
    expect_failure("short magic", r, &err, ZS_E_NOT_RECORDING, "short-magic", "offset 0", NULL);
    free(z);

    /* Magic but no version. */
    z = zstd_frame(ZS_MAGIC, ZS_MAGIC_LEN, &n);
    r = zs_reader_open_memory(z, n, "no-version", &err);
    expect_failure("no version", r, &err, ZS_E_NOT_RECORDING, "no-version", NULL, NULL);
    free(z);
}

static void test_format_version(void)
{
    static const uint64_t bad[] = {ZS_FORMAT_VERSION + 1, 0, 1ULL << 40};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zs_buf b = {0};
        preamble(&b, bad[i]);
        put_empty_header(&b);
        size_t n;
        uint8_t *z = zstd_frame(b.data, b.len, &n);
        zs_error err;
        const char *path = tmp_path("newer.zspy");
        write_file(path, z, n);
        zs_reader *r = open_file(path, &err);
        CHECK(r != NULL);
        expect_failure("format version", r, &err, ZS_E_FORMAT_VERSION, path, "offset 0", NULL);
        free(z);
        zs_buf_free(&b);
    }
}

/* Writes a recording of nframes frames (header in the first, 100 samples in
 * each); fills the frame offsets (offsets[nframes] = file size). */
static void frames_recording(const char *path, int nframes, uint64_t *offsets, int trailer)
{
    zs_error err = {0};
    zs_writer *w = zs_writer_create(path, (uid_t)-1, (gid_t)-1, &err);
    zs_writer_header(w, header_kv, sizeof header_kv / sizeof header_kv[0], &err);
    zs_writer_stack(w, 0, 1, some_frames, 5, &err);
    uint64_t t = 0;
    for (int f = 0; f < nframes; f++) {
        offsets[f] = zs_writer_bytes_written(w);
        for (int i = 0; i < 100; i++)
            zs_writer_sample(w, t += 4000, 0, 0, &err);
        zs_writer_snapshot(w, 1, 0x1000 * (uint64_t)f, big_snapshot + f, 3000, &err);
        if (f < nframes - 1 || !trailer)
            zs_writer_end_frame(w, &err);
    }
    if (trailer)
        zs_writer_close(w, 100 * (uint64_t)nframes, 0, t, &err);
    else
        zs_writer_abandon(w);
    struct stat st;
    stat(path, &st);
    offsets[nframes] = (uint64_t)st.st_size;
}

static void test_corrupt_frame(void)
{
    enum { FRAMES = 5, BAD = 3 };
    uint64_t off[FRAMES + 1];
    const char *path = tmp_path("corrupt.zspy");
    frames_recording(path, FRAMES, off, 1);
    size_t len;
    uint8_t *data = read_file(path, &len);
    CHECK(len == off[FRAMES]);
    size_t mid = (size_t)(off[BAD] + off[BAD + 1]) / 2;
    for (size_t i = mid - 4; i < mid + 4; i++)
        data[i] ^= 0x5a;
    write_file(path, data, len);

    char want[64];
    snprintf(want, sizeof want, "offset %llu", (unsigned long long)off[BAD]);
    zs_error err;
    size_t before;
    zs_reader *r = open_file(path, &err);
    CHECK(r != NULL);
    expect_failure("corrupt frame", r, &err, ZS_E_CORRUPT, path, want, &before);
    /* header, stack, then 101 records in each good frame */
    CHECK(before == 2 + 101 * BAD);
    free(data);
}

static void test_record_past_frame(void)
{
    zs_buf b = {0};
    zs_error err;
    size_t n, before;

    /* In the first frame: the length says 100, 3 bytes follow. */
    preamble(&b, ZS_FORMAT_VERSION);
    put_empty_header(&b);
    zs_buf_reserve(&b, 16);
    zs_put_u8(&b, ZS_REC_SAMPLE);
    zs_put_varint(&b, 100);
    zs_put_bytes(&b, "\x01\x02\x03", 3);
    uint8_t *z = zstd_frame(b.data, b.len, &n);
    const char *path = tmp_path("past-frame.zspy");
    write_file(path, z, n);
    zs_reader *r = open_file(path, &err);
    expect_failure("record past its frame", r, &err, ZS_E_CORRUPT, path, "offset 0", &before);
    CHECK(before == 1);
    free(z);

    /* In the second frame, with an absurd length: the offset is the second
     * frame's. */
    b.len = 0;
    preamble(&b, ZS_FORMAT_VERSION);
    put_empty_header(&b);
    size_t n1, n2;
    uint8_t *z1 = zstd_frame(b.data, b.len, &n1);
    b.len = 0;
    zs_buf_reserve(&b, 32);
    zs_put_u8(&b, ZS_REC_SNAPSHOT);
    zs_put_varint(&b, UINT64_MAX);
    zs_put_bytes(&b, "\x01\x02\x03", 3);
    uint8_t *z2 = zstd_frame(b.data, b.len, &n2);
    uint8_t *both = malloc(n1 + n2);
    memcpy(both, z1, n1);
    memcpy(both + n1, z2, n2);
    char want[64];
    snprintf(want, sizeof want, "offset %zu", n1);
    r = zs_reader_open_memory(both, n1 + n2, "second-frame", &err);
    expect_failure("absurd length", r, &err, ZS_E_CORRUPT, "second-frame", want, &before);
    CHECK(before == 1);
    free(z1);
    free(z2);
    free(both);

    /* A record whose payload is shorter than its fields need. */
    b.len = 0;
    preamble(&b, 4);
    put_empty_header(&b);
    put_record(&b, ZS_REC_STACK, "\x01\x02\x05\x80", 4); /* 5 frames announced, none there */
    z = zstd_frame(b.data, b.len, &n);
    r = zs_reader_open_memory(z, n, "short-payload", &err);
    expect_failure("malformed stack", r, &err, ZS_E_CORRUPT, "short-payload", "malformed", NULL);
    free(z);

    /* A PROCESS and a TRAILER cut short: corrupt, not skipped as records
     * of a later version. */
    static const struct { uint8_t type; const char *payload; size_t len; const char *name; } cut[] = {
        {ZS_REC_PROCESS, "\x05\x02\x01", 3, "short-process"}, /* 2 pairs announced, one byte */
        {ZS_REC_TRAILER, "\x05", 1, "short-trailer"},          /* samples only */
    };
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        b.len = 0;
        preamble(&b, ZS_FORMAT_VERSION);
        put_empty_header(&b);
        put_record(&b, cut[i].type, cut[i].payload, cut[i].len);
        z = zstd_frame(b.data, b.len, &n);
        r = zs_reader_open_memory(z, n, cut[i].name, &err);
        expect_failure(cut[i].name, r, &err, ZS_E_CORRUPT, cut[i].name, "malformed", NULL);
        free(z);
    }

    /* Format-4 frames: a kind this reader does not know (0, and 3, the
     * inlined frame reserved for ZAM), and a script frame without a Func,
     * which would read as a native frame. */
    static const struct { const char *payload; size_t len; const char *name; } frames4[] = {
        {"\x01\x02\x01\x10", 4, "kind-0"},         /* (4 << 2 | 0) */
        {"\x01\x02\x01\x13\x05", 5, "kind-3"},     /* (4 << 2 | 3), stmt */
        {"\x01\x02\x01\x01\x05", 5, "no-func"},    /* (0 << 2 | 1), stmt */
        {"\x01\x02\x01\x11", 4, "no-stmt"},        /* a script frame cut short */
    };
    for (size_t i = 0; i < sizeof frames4 / sizeof frames4[0]; i++) {
        b.len = 0;
        preamble(&b, 4);
        put_empty_header(&b);
        put_record(&b, ZS_REC_STACK, frames4[i].payload, frames4[i].len);
        z = zstd_frame(b.data, b.len, &n);
        r = zs_reader_open_memory(z, n, frames4[i].name, &err);
        expect_failure(frames4[i].name, r, &err, ZS_E_CORRUPT, frames4[i].name, "malformed", NULL);
        free(z);
    }
    /* The same bytes in format 3 are frames of their own kind: func, stmt. */
    b.len = 0;
    preamble(&b, 3);
    put_empty_header(&b);
    put_record(&b, ZS_REC_STACK, "\x01\x02\x01\x00\x05", 5);
    z = zstd_frame(b.data, b.len, &n);
    r = zs_reader_open_memory(z, n, "format-3", &err);
    CHECK(r != NULL);
    zs_record rec3;
    while (r && zs_reader_next(r, &rec3, &err) > 0 && rec3.type != ZS_REC_STACK)
        ;
    CHECK(r && rec3.type == ZS_REC_STACK && rec3.stack.nframes == 1 &&
          zs_frame_is_native(&rec3.stack.frames[0]) && rec3.stack.frames[0].stmt == 5);
    zs_reader_close(r);
    free(z);

    /* More frames than the format allows in one stack. */
    b.len = 0;
    preamble(&b, ZS_FORMAT_VERSION);
    put_empty_header(&b);
    uint8_t too_deep[8];
    zs_buf tmp = {too_deep, 0, sizeof too_deep};
    zs_put_varint(&tmp, 0);
    zs_put_varint(&tmp, 1);
    zs_put_varint(&tmp, ZS_MAX_FRAMES + 1);
    put_record(&b, ZS_REC_STACK, too_deep, tmp.len);
    z = zstd_frame(b.data, b.len, &n);
    r = zs_reader_open_memory(z, n, "too-deep", &err);
    expect_failure("too deep", r, &err, ZS_E_CORRUPT, "too-deep", NULL, NULL);
    free(z);

    /* A record before the header. */
    b.len = 0;
    preamble(&b, ZS_FORMAT_VERSION);
    put_record(&b, ZS_REC_SAMPLE, "\x01\x00", 2);
    put_empty_header(&b);
    z = zstd_frame(b.data, b.len, &n);
    r = zs_reader_open_memory(z, n, "no-header", &err);
    expect_failure("no header first", r, &err, ZS_E_CORRUPT, "no-header", "header", NULL);
    free(z);

    /* A frame that decompresses to more than the reader holds. */
    size_t huge = ZS_MAX_FRAME_BYTES + (1 << 20);
    uint8_t *zeros = calloc(1, huge);
    b.len = 0;
    preamble(&b, ZS_FORMAT_VERSION);
    memcpy(zeros, b.data, b.len);
    z = zstd_frame(zeros, huge, &n);
    free(zeros);
    r = zs_reader_open_memory(z, n, "bomb", &err);
    expect_failure("frame too large", r, &err, ZS_E_CORRUPT, "bomb", "offset 0", NULL);
    free(z);
    zs_buf_free(&b);
}

/* A MODULE or LOCATION payload after a header; the reader must refuse it
 * with want in its message and the frame's offset. */
static void expect_bad_native(const char *name, const zs_buf *records, const char *want)
{
    zs_buf b = {0};
    zs_error err;
    preamble(&b, ZS_FORMAT_VERSION);
    put_empty_header(&b);
    zs_buf_reserve(&b, records->len);
    zs_put_bytes(&b, records->data, records->len);
    size_t n;
    uint8_t *z = zstd_frame(b.data, b.len, &n);
    zs_reader *r = zs_reader_open_memory(z, n, name, &err);
    expect_failure(name, r, &err, ZS_E_CORRUPT, name, want, NULL);
    free(z);
    zs_buf_free(&b);
}

/* One MODULE record: pid 9, the given id, start and end, and strings. */
static void put_module(zs_buf *b, uint64_t id, const char *build_id, const char *path,
                       uint64_t start, uint64_t end)
{
    zs_buf p = {0};
    zs_buf_reserve(&p, 64);
    zs_put_varint(&p, 9);
    zs_put_varint(&p, id);
    zs_put_string(&p, build_id);
    zs_put_string(&p, path);
    zs_buf_reserve(&p, 32);
    zs_put_varint(&p, start);
    zs_put_varint(&p, end);
    zs_put_varint(&p, 0);
    put_record(b, ZS_REC_MODULE, p.data, p.len);
    zs_buf_free(&p);
}

static void put_location(zs_buf *b, uint64_t id, uint64_t module)
{
    uint8_t raw[64];
    zs_buf p = {raw, 0, sizeof raw};
    zs_put_varint(&p, 9);
    zs_put_varint(&p, id);
    zs_put_varint(&p, module);
    zs_put_varint(&p, 0x40);
    zs_put_varint(&p, 0);
    put_record(b, ZS_REC_LOCATION, p.data, p.len);
}

/* One LINES record of pid 9: location, n lines (1 each), the last at line. */
static void put_lines(zs_buf *b, uint64_t location, uint64_t n, uint64_t line)
{
    uint8_t raw[256];
    zs_buf p = {raw, 0, sizeof raw};
    zs_put_varint(&p, 9);
    zs_put_varint(&p, location);
    zs_put_varint(&p, n);
    for (uint64_t i = 0; i < n && i < 20; i++) {
        zs_put_varint(&p, 1);
        zs_put_varint(&p, 1);
        zs_put_varint(&p, i + 1 == n ? line : 1);
    }
    put_record(b, ZS_REC_LINES, p.data, p.len);
}

static void test_bad_lines_records(void)
{
    zs_buf b = {0};
    put_record(&b, ZS_REC_LINES, "\x09\x00\x02\x01", 4); /* two lines promised, none there */
    expect_bad_native("lines-cut", &b, "malformed");
    b.len = 0;
    put_lines(&b, 0, 1, 10); /* no location 0 yet */
    expect_bad_native("lines-undefined", &b, "location not defined before");
    b.len = 0;
    put_location(&b, 0, 0);
    put_lines(&b, 0, 0, 1);
    expect_bad_native("lines-none", &b, "none, or more than 16");
    b.len = 0;
    put_location(&b, 0, 0);
    put_lines(&b, 0, ZS_MAX_INLINE + 1, 1);
    expect_bad_native("lines-many", &b, "none, or more than 16");
    b.len = 0;
    put_location(&b, 0, 0);
    put_lines(&b, 0, 2, 0);
    expect_bad_native("lines-zero", &b, "line number out of range");
    b.len = 0;
    put_location(&b, 0, 0);
    put_lines(&b, 0, 1, ZS_MAX_LINE + 1);
    expect_bad_native("lines-huge", &b, "line number out of range");
    zs_buf_free(&b);
}

static void test_bad_native_records(void)
{
    zs_buf b = {0};
    /* Cut short: the ids, no strings. */
    put_record(&b, ZS_REC_MODULE, "\x09\x00", 2);
    expect_bad_native("module-cut", &b, "malformed");
    b.len = 0;
    put_record(&b, ZS_REC_LOCATION, "\x09\x00\x00", 3);
    expect_bad_native("location-cut", &b, "malformed");
    /* Ids out of order: module 1 first; location 0 twice. */
    b.len = 0;
    put_module(&b, 1, "ab", "/bin/zeek", 0x1000, 0x2000);
    expect_bad_native("module-order", &b, "module id out of order");
    b.len = 0;
    put_location(&b, 0, 0);
    put_location(&b, 0, 0);
    expect_bad_native("location-order", &b, "location id out of order");
    /* A location in a module not defined before it. */
    b.len = 0;
    put_module(&b, 0, "ab", "/bin/zeek", 0x1000, 0x2000);
    put_location(&b, 0, 2);
    expect_bad_native("location-module", &b, "not defined before");
    /* start above end, start equal to end. */
    b.len = 0;
    put_module(&b, 0, "ab", "/bin/zeek", 0x3000, 0x2000);
    expect_bad_native("module-backwards", &b, "start not below its end");
    b.len = 0;
    put_module(&b, 0, "ab", "/bin/zeek", 0x2000, 0x2000);
    expect_bad_native("module-empty", &b, "start not below its end");
    /* Strings: a build-id that is not hex, an empty path, a NUL in it. */
    b.len = 0;
    put_module(&b, 0, "xyz", "/bin/zeek", 0x1000, 0x2000);
    expect_bad_native("module-build-id", &b, "build-id");
    b.len = 0;
    put_module(&b, 0, "ab", "", 0x1000, 0x2000);
    expect_bad_native("module-no-path", &b, "path");
    zs_buf_free(&b);
}

static void test_truncated(void)
{
    enum { FRAMES = 6 };
    uint64_t off[FRAMES + 1];
    const char *full = tmp_path("full.zspy");
    frames_recording(full, FRAMES, off, 1);
    size_t len;
    uint8_t *data = read_file(full, &len);
    uint64_t last = off[FRAMES - 1];
    size_t whole_records = 2 + 101 * (FRAMES - 1);

    /* Cut inside the last frame at several points: its header, its middle,
     * its last byte (the checksum). */
    size_t cuts[] = {last + 1, last + 3, last + 6, (last + len) / 2, len - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        const char *path = tmp_path("cut.zspy");
        write_file(path, data, cuts[c]);
        for (int from_memory = 0; from_memory < 2; from_memory++) {
            zs_error err = {0};
            zs_reader *r = from_memory ? zs_reader_open_memory(data, cuts[c], "cut-mem", &err)
                                       : zs_reader_open(path, &err);
            CHECK(r != NULL);
            if (!r)
                continue;
            zs_record rec;
            size_t n = 0, samples = 0;
            int got, trailer = 0;
            while ((got = zs_reader_next(r, &rec, &err)) > 0) {
                n++;
                samples += rec.type == ZS_REC_SAMPLE;
                trailer |= rec.type == ZS_REC_TRAILER;
            }
            if (got != 0)
                fprintf(stderr, "cut at %zu: %s\n", cuts[c], err.detail);
            CHECK(got == 0);
            /* Every record of the whole frames, in order; what a cut frame
             * gives up to the cut is a bonus, never a corrupt record. */
            CHECK(n >= whole_records);
            CHECK(samples >= 100 * (FRAMES - 1));
            /* Only the checksum missing: the blocks all decoded. */
            if (cuts[c] < len - 4)
                CHECK(!trailer);
            uint64_t at = 0;
            CHECK(zs_reader_truncated(r, &at));
            CHECK(at == last);
            zs_reader_close(r);
        }
    }

    /* Cut exactly between frames: a shorter recording, not a truncated one. */
    zs_error err = {0};
    zs_reader *r = zs_reader_open_memory(data, last, "boundary", &err);
    zs_record rec;
    size_t n = 0;
    int got;
    while ((got = zs_reader_next(r, &rec, &err)) > 0)
        n++;
    CHECK(got == 0);
    CHECK(n == whole_records);
    CHECK(!zs_reader_truncated(r, NULL));
    zs_reader_close(r);

    /* Cut inside the first frame: only the preamble and what fits. */
    r = zs_reader_open_memory(data, 4, "first-cut", &err);
    CHECK(r != NULL);
    if (r) {
        got = zs_reader_next(r, &rec, &err);
        CHECK(got < 0);
        CHECK(err.code == ZS_E_TRUNCATED);
        zs_reader_close(r);
    }
    free(data);
}

/* Reads path (or its first len bytes from data) to the end: counts. */
static int read_counts(const uint8_t *data, size_t len, size_t *samples, int *trailer,
                       int *truncated)
{
    zs_error err = {0};
    zs_reader *r = zs_reader_open_memory(data, len, "open-frame", &err);
    if (!r)
        return -1;
    zs_record rec;
    int got;
    *samples = 0;
    *trailer = 0;
    while ((got = zs_reader_next(r, &rec, &err)) > 0) {
        *samples += rec.type == ZS_REC_SAMPLE;
        *trailer |= rec.type == ZS_REC_TRAILER;
    }
    *truncated = zs_reader_truncated(r, NULL);
    zs_reader_close(r);
    return got;
}

/* The recorder's frame stays open across flushes: what a killed recorder
 * left (its last flush complete) reads whole, not cut short; a write cut
 * inside a block is cut short, the flushes before it kept; closed, the
 * recording is one complete frame. */
static void test_open_frame(void)
{
    zs_error err = {0};
    const char *path = tmp_path("open.zspy");
    zs_writer *w = zs_writer_create(path, (uid_t)-1, (gid_t)-1, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(zs_writer_header(w, header_kv, 2, &err) == 0);
    CHECK(zs_writer_stack(w, 0, 1, some_frames, 5, &err) == 0);
    uint64_t flushed[3];
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < 100; i++)
            CHECK(zs_writer_sample(w, 4000, 0, 0, &err) == 0);
        CHECK(zs_writer_flush(w, &err) == 0);
        flushed[f] = zs_writer_bytes_written(w);
    }
    size_t len, samples;
    int trailer, truncated;
    uint8_t *data = read_file(path, &len);
    CHECK(data && len == flushed[2]);
    CHECK(ZSTD_isError(ZSTD_findFrameCompressedSize(data, len))); /* one frame, not ended */
    CHECK(read_counts(data, len, &samples, &trailer, &truncated) == 0);
    CHECK(samples == 300 && !trailer && !truncated);
    CHECK(read_counts(data, flushed[1], &samples, &trailer, &truncated) == 0);
    CHECK(samples == 200 && !trailer && !truncated);
    CHECK(read_counts(data, len - 2, &samples, &trailer, &truncated) == 0);
    CHECK(samples >= 200 && samples < 300 && truncated);
    free(data);
    CHECK(zs_writer_close(w, 300, 0, 0, &err) == 0);
    data = read_file(path, &len);
    CHECK(data && ZSTD_findFrameCompressedSize(data, len) == len);
    CHECK(read_counts(data, len, &samples, &trailer, &truncated) == 0);
    CHECK(samples == 300 && trailer && !truncated);
    free(data);
}

static void test_unknown_records(void)
{
    zs_buf b = {0};
    preamble(&b, ZS_FORMAT_VERSION);
    put_empty_header(&b);
    put_record(&b, 42, "abc", 3);
    put_record(&b, ZS_REC_SAMPLES, "\x01\x05\x00", 3);
    put_record(&b, 200, "", 0);
    put_record(&b, 0, "\xff\xff", 2);
    put_record(&b, ZS_REC_SAMPLES, "\x01\x07\x00", 3);
    put_record(&b, 255, "xyz", 3);
    put_record(&b, ZS_REC_TRAILER, "\x02\x00\x0c", 3);
    size_t n;
    uint8_t *z = zstd_frame(b.data, b.len, &n);
    zs_error err = {0};
    zs_reader *r = zs_reader_open_memory(z, n, "unknown", &err);
    CHECK(r != NULL);
    if (r) {
        zs_record rec;
        zs_record_type want[] = {ZS_REC_HEADER, ZS_REC_SAMPLE, ZS_REC_SAMPLE, ZS_REC_TRAILER};
        size_t i = 0;
        int got;
        while ((got = zs_reader_next(r, &rec, &err)) > 0) {
            CHECK(i < 4 && rec.type == want[i]);
            if (i == 2)
                CHECK(rec.sample.t_us == 12);
            i++;
        }
        CHECK(got == 0);
        CHECK(i == 4);
        CHECK(zs_reader_skipped_records(r) == 4);
        zs_reader_close(r);
    }
    free(z);
    zs_buf_free(&b);
}

/* Format 7: the writer cuts a batch where the kind changes (one record
 * per run), the reader marks each sample of a SAMPLES_OFF_CPU batch and
 * keeps one clock across both kinds; a format-6 file's type 13 is a type
 * that reader did not know: skipped, as before. */
static void test_off_cpu_samples(void)
{
    const char *path = tmp_path("off-cpu.zspy");
    zs_error err = {0};
    zs_writer *w = zs_writer_create(path, -1, -1, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(zs_writer_header(w, header_kv, 2, &err) == 0);
    CHECK(zs_writer_stack(w, 0, 1, some_frames, 5, &err) == 0);
    static const int kind[] = {0, 0, 0, 1, 1, 0, 1};
    enum { NK = sizeof kind / sizeof kind[0] };
    for (int i = 0; i < NK; i++)
        CHECK(zs_writer_sample(w, 1000 * (uint64_t)(i + 1), 0, kind[i], &err) == 0);
    CHECK(zs_writer_close(w, NK, 0, 0, &err) == 0);

    /* The records as written: 4 batches, of 3, 2, 1 and 1 samples. */
    size_t len, raw_len = 0;
    uint8_t *file = read_file(path, &len);
    uint8_t *raw = malloc(1 << 20);
    if (file && raw) {
        raw_len = ZSTD_decompress(raw, 1 << 20, file, len);
        CHECK(!ZSTD_isError(raw_len));
    }
    zs_cursor c = {raw, raw + (ZSTD_isError(raw_len) ? 0 : raw_len)};
    const uint8_t *magic;
    uint64_t version, l, batch;
    CHECK(zs_get_bytes(&c, ZS_MAGIC_LEN, &magic) == 0 && zs_get_varint(&c, &version) == 0);
    CHECK(version == ZS_FORMAT_VERSION);
    char batches[16] = "";
    uint8_t type;
    const uint8_t *payload;
    while (c.p < c.end && zs_get_u8(&c, &type) == 0 && zs_get_varint(&c, &l) == 0 &&
           zs_get_bytes(&c, (size_t)l, &payload) == 0) {
        zs_cursor pc = {payload, payload + l};
        if ((type == ZS_REC_SAMPLES || type == ZS_REC_SAMPLES_OFF_CPU) &&
            zs_get_varint(&pc, &batch) == 0 && strlen(batches) + 2 < sizeof batches)
            snprintf(batches + strlen(batches), 3, "%c%c", type == ZS_REC_SAMPLES ? 'o' : 'f',
                     (char)('0' + batch));
    }
    if (strcmp(batches, "o3f2o1f1"))
        fprintf(stderr, "off-cpu batches: %s\n", batches);
    CHECK(!strcmp(batches, "o3f2o1f1"));
    free(raw);
    free(file);

    zs_reader *r = open_file(path, &err);
    CHECK(r != NULL);
    zs_record rec;
    int i = 0;
    while (r && zs_reader_next(r, &rec, &err) == 1) {
        if (rec.type != ZS_REC_SAMPLE)
            continue;
        CHECK(i < NK && rec.sample.t_us == 1000 * (uint64_t)(i + 1) && rec.sample.off_cpu == kind[i]);
        i++;
    }
    CHECK(i == NK);
    zs_reader_close(r);

    /* By hand: SAMPLES (dt 5), SAMPLES_OFF_CPU (dt 7, 1), SAMPLES (dt 2),
     * read as format 7 and as format 6. */
    for (int v = 6; v <= 7; v++) {
        zs_buf b = {0};
        preamble(&b, (uint64_t)v);
        put_empty_header(&b);
        put_record(&b, ZS_REC_SAMPLES, "\x01\x05\x00", 3);
        put_record(&b, ZS_REC_SAMPLES_OFF_CPU, "\x02\x07\x01\x00\x00", 5);
        put_record(&b, ZS_REC_SAMPLES, "\x01\x02\x00", 3);
        size_t n;
        uint8_t *z = zstd_frame(b.data, b.len, &n);
        r = zs_reader_open_memory(z, n, "by-hand", &err);
        CHECK(r != NULL);
        uint64_t want7[][2] = {{5, 0}, {12, 1}, {13, 1}, {15, 0}}, want6[][2] = {{5, 0}, {7, 0}};
        size_t nwant = v == 7 ? 4 : 2, k = 0;
        while (r && zs_reader_next(r, &rec, &err) == 1) {
            if (rec.type != ZS_REC_SAMPLE)
                continue;
            const uint64_t *want = v == 7 ? want7[k] : want6[k];
            CHECK(k < nwant && rec.sample.t_us == want[0] && (uint64_t)rec.sample.off_cpu == want[1]);
            k++;
        }
        CHECK(k == nwant);
        CHECK(r && zs_reader_skipped_records(r) == (v == 7 ? 0u : 1u));
        zs_reader_close(r);
        free(z);
        zs_buf_free(&b);
    }

    /* An empty or overlong off-CPU batch is as malformed as a SAMPLES one. */
    static const struct { const char *payload; size_t len; const char *name; } bad[] = {
        {"\x00", 1, "off-cpu-empty"}, {"\x02\x01\x01\x00", 4, "off-cpu-short"},
        {"\x01\x01\x00\x00", 4, "off-cpu-long"},
    };
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
        zs_buf b = {0};
        preamble(&b, 7);
        put_empty_header(&b);
        put_record(&b, ZS_REC_SAMPLES_OFF_CPU, bad[j].payload, bad[j].len);
        size_t n;
        uint8_t *z = zstd_frame(b.data, b.len, &n);
        r = zs_reader_open_memory(z, n, bad[j].name, &err);
        expect_failure(bad[j].name, r, &err, ZS_E_CORRUPT, bad[j].name, "malformed record", NULL);
        free(z);
        zs_buf_free(&b);
    }
}

/* Format 5: stacks written as the first frames of an earlier one and the
 * rest come back whole; bases that are not there, of another process or
 * shorter than what is shared are refused. */
static void test_stack_bases(void)
{
    const char *path = tmp_path("bases.zspy");
    zs_error err = {0};
    zs_writer *w = zs_writer_create(path, -1, -1, &err);
    CHECK(w != NULL);
    CHECK(zs_writer_header(w, header_kv, 2, &err) == 0);
    zs_frame longer[7];
    memcpy(longer, some_frames, 5 * sizeof *longer);
    longer[5] = zs_native_frame(77);
    longer[6] = (zs_frame){0x5000, 0x5008};
    zs_stack_base none = {0, 0}, on_first = {1, 3}, on_second = {2, 7};
    CHECK(zs_writer_stack_from(w, 0, 4242, &none, some_frames, 5, &err) == 0);
    CHECK(zs_writer_stack_from(w, 1, 4242, &on_first, longer, 7, &err) == 0);
    CHECK(zs_writer_stack_from(w, 2, 4242, &on_second, longer, 7, &err) == 0); /* all shared */
    zs_stack_base later = {4, 1}, too_many = {1, 8};
    CHECK(zs_writer_stack_from(w, 3, 4242, &later, longer, 7, &err) != 0);
    CHECK(zs_writer_stack_from(w, 3, 4242, &too_many, longer, 7, &err) != 0);
    CHECK(zs_writer_close(w, 0, 0, 0, &err) == 0);
    zs_reader *r = open_file(path, &err);
    CHECK(r != NULL);
    zs_record rec;
    size_t seen = 0;
    while (r && zs_reader_next(r, &rec, &err) == 1) {
        if (rec.type != ZS_REC_STACK)
            continue;
        const zs_frame *want = rec.stack.id == 0 ? some_frames : longer;
        CHECK(rec.stack.nframes == (rec.stack.id == 0 ? 5u : 7u));
        CHECK(!memcmp(rec.stack.frames, want, rec.stack.nframes * sizeof *want));
        seen++;
    }
    CHECK(seen == 3);
    zs_reader_close(r);

    static const struct { const char *payload; size_t len; const char *name, *want; } bad[] = {
        {"\x00\x02\x01\x01\x00", 5, "base-undefined", "not defined before"}, /* 0 on 0 */
        {"\x01\x03\x01\x01\x00", 5, "base-other-pid", "not defined before"}, /* pid 3 on pid 2's */
        {"\x01\x02\x01\x02\x00", 5, "base-too-short", "more frames than"},   /* 2 of 1 */
        {"\x01\x02\x01\x00\x00", 5, "base-shares-none", "more frames than"},
        {"\x00\x02\x00\x01\x16", 5, "defined-twice", "defined twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zs_buf b = {0};
        preamble(&b, 5);
        put_empty_header(&b);
        put_record(&b, ZS_REC_STACK, "\x00\x02\x00\x01\x16", 5); /* stack 0, pid 2: one native frame */
        put_record(&b, ZS_REC_STACK, bad[i].payload, bad[i].len);
        size_t n;
        uint8_t *z = zstd_frame(b.data, b.len, &n);
        r = zs_reader_open_memory(z, n, bad[i].name, &err);
        expect_failure(bad[i].name, r, &err, ZS_E_CORRUPT, bad[i].name, bad[i].want, NULL);
        free(z);
        zs_buf_free(&b);
    }
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    fill_fixtures();
    test_round_trip();
    test_many_frames();
    test_writer_limits();
    test_not_a_recording();
    test_format_version();
    test_corrupt_frame();
    test_record_past_frame();
    test_truncated();
    test_open_frame();
    test_bad_native_records();
    test_bad_lines_records();
    test_unknown_records();
    test_stack_bases();
    test_off_cpu_samples();

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    CHECK_MAIN_END;
}
