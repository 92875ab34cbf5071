/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "zs_codec.h"
#include "zs_grow.h"
#include "zs_intern.h"

struct zs_reader {
    char *name;
    FILE *file;            /* NULL when reading from memory */
    const uint8_t *mem;
    size_t mem_len;

    ZSTD_DCtx *dctx;
    uint8_t *in;
    size_t in_cap;
    ZSTD_inBuffer input;
    uint64_t consumed;     /* file bytes handed to zstd and used */
    int input_eof;

    zs_buf frame;          /* decompressed bytes of the current frame */
    uint64_t frame_offset; /* file offset where the current frame began */
    size_t pos;            /* next record within frame */
    int at_end;
    int truncated, unfinished;
    uint64_t truncated_offset;

    int seen_preamble;
    int seen_header;
    uint32_t version;
    uint64_t t_us;
    uint64_t skipped_records;
    uint64_t snapshot_bytes; /* all snapshot regions so far, for the bomb check */

    /* The SAMPLES record being handed out one sample at a time. */
    size_t batch_left;
    zs_cursor batch_dt, batch_id;
    int batch_off_cpu; /* a SAMPLES_OFF_CPU record (format 7) */

    /* Per process, the next MODULE and LOCATION ids (dense, in order). */
    struct native_ids { uint32_t pid; uint64_t modules, locations; } *pids;
    size_t npids, pids_cap;
    const char *why; /* what a malformed record is, for the error */

    /* Format 5: every stack defined so far, for the stacks built on it. */
    struct kept_stack { uint32_t pid, n; zs_frame *frames; } *stacks;
    size_t nstacks, stacks_cap;
    zs_intern stack_index; /* stack id -> its entry in stacks */
    uint64_t kept_frames;

    /* Scratch for the record being returned. */
    zs_kv kv[ZS_MAX_KV];
    zs_frame frames[ZS_MAX_FRAMES];
    zs_native_lines lines;
    zs_buf strings;
};

static zs_reader *reader_new(const char *name, zs_error *err)
{
    zs_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->name = strdup(name)) || !(r->dctx = ZSTD_createDCtx())) {
        zs_fail(err, ZS_E_NOMEM, "%s: reader", name);
        zs_reader_close(r);
        return NULL;
    }
    /* Bound the decoder window so a hostile frame cannot make it allocate
     * gigabytes. */
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 27);
    return r;
}

static int check_zstd_magic(const uint8_t *p, size_t n, const char *name, zs_error *err)
{
    if (n == 0)
        return zs_fail(err, ZS_E_NOT_RECORDING, "%s: empty file", name);
    static const uint8_t magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    if (n < 4 || memcmp(p, magic, 4))
        return zs_fail(err, ZS_E_NOT_RECORDING, "%s: offset 0: no zstd frame (not a recording)",
                       name);
    return 0;
}

zs_reader *zs_reader_open(const char *path, zs_error *err)
{
    zs_reader *r = reader_new(path, err);
    if (!r)
        return NULL;
    r->file = fopen(path, "rb");
    if (!r->file) {
        zs_fail(err, errno == EACCES ? ZS_E_PERMISSION : ZS_E_IO, "%s: %s", path, strerror(errno));
        goto fail;
    }
    r->in_cap = ZSTD_DStreamInSize();
    if (!(r->in = malloc(r->in_cap))) {
        zs_fail(err, ZS_E_NOMEM, "%s: input buffer", path);
        goto fail;
    }
    size_t n = fread(r->in, 1, r->in_cap, r->file);
    if (ferror(r->file)) {
        zs_fail(err, ZS_E_IO, "%s: read error", path);
        goto fail;
    }
    if (check_zstd_magic(r->in, n, path, err))
        goto fail;
    r->input = (ZSTD_inBuffer){r->in, n, 0};
    r->input_eof = n < r->in_cap;
    return r;
fail:
    zs_reader_close(r);
    return NULL;
}

zs_reader *zs_reader_open_memory(const void *data, size_t len, const char *name, zs_error *err)
{
    zs_reader *r = reader_new(name, err);
    if (!r)
        return NULL;
    if (check_zstd_magic(data, len, name, err)) {
        zs_reader_close(r);
        return NULL;
    }
    r->input = (ZSTD_inBuffer){data, len, 0};
    r->input_eof = 1;
    return r;
}

static int refill(zs_reader *r, zs_error *err)
{
    if (r->input_eof || !r->file)
        return 0;
    size_t n = fread(r->in, 1, r->in_cap, r->file);
    if (ferror(r->file))
        return zs_fail(err, ZS_E_IO, "%s: offset %llu: read error", r->name,
                       (unsigned long long)r->consumed);
    r->input = (ZSTD_inBuffer){r->in, n, 0};
    r->input_eof = n < r->in_cap;
    return 0;
}

/* What libzstd's streaming decoder asks for next when it stands between
 * two blocks with nothing left over: the next block's 3-byte header (RFC
 * 8878, 3.1.1.2). */
enum { ZSTD_NEXT_AT_BLOCK_START = 3 };

/* Decompresses the next whole zstd frame into r->frame. 1: a frame, 0: no
 * more frames, -1: error. A frame the file ends in (the recorder's open
 * frame: it did not finish) is r->unfinished, and also r->truncated when
 * it ends inside a block (a write cut short). */
static int load_frame(zs_reader *r, zs_error *err)
{
    r->frame.len = 0;
    r->pos = 0;
    r->frame_offset = r->consumed;
    int started = 0;
    size_t wants = 0;
    for (;;) {
        if (r->input.pos == r->input.size) {
            if (refill(r, err))
                return -1;
            if (r->input.pos == r->input.size) {
                if (!started)
                    return 0;
                r->unfinished = 1;
                if (r->frame.len == 0 || wants != ZSTD_NEXT_AT_BLOCK_START) {
                    r->truncated = 1;
                    r->truncated_offset = r->frame_offset;
                }
                return 1;
            }
        }
        if (r->frame.cap - r->frame.len < ZSTD_DStreamOutSize()) {
            if (r->frame.len + ZSTD_DStreamOutSize() > ZS_MAX_FRAME_BYTES)
                return zs_fail(err, ZS_E_CORRUPT,
                               "%s: offset %llu: zstd frame decompresses to more than %d MiB",
                               r->name, (unsigned long long)r->frame_offset,
                               ZS_MAX_FRAME_BYTES >> 20);
            if (zs_buf_reserve(&r->frame, ZSTD_DStreamOutSize()))
                return zs_fail(err, ZS_E_NOMEM, "%s: frame buffer", r->name);
        }
        ZSTD_outBuffer out = {r->frame.data, r->frame.cap, r->frame.len};
        size_t before = r->input.pos;
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &r->input);
        r->consumed += r->input.pos - before;
        r->frame.len = out.pos;
        started = 1;
        if (ZSTD_isError(ret)) {
            return zs_fail(err, ZS_E_CORRUPT, "%s: offset %llu: corrupt zstd frame: %s", r->name,
                           (unsigned long long)r->frame_offset, ZSTD_getErrorName(ret));
        }
        if (ret == 0)
            return 1;
        wants = ret;
    }
}

static int corrupt(zs_reader *r, const char *what, zs_error *err)
{
    return zs_fail(err, ZS_E_CORRUPT, "%s: offset %llu: %s (decompressed byte %zu of the frame)",
                   r->name, (unsigned long long)r->frame_offset, what, r->pos);
}

static int read_preamble(zs_reader *r, zs_error *err)
{
    if (r->unfinished && r->frame.len < ZS_MAGIC_LEN + 1)
        return zs_fail(err, ZS_E_TRUNCATED,
                       "%s: offset 0: cut short inside its first zstd frame; nothing to recover",
                       r->name);
    zs_cursor c = {r->frame.data, r->frame.data + r->frame.len};
    const uint8_t *magic;
    uint64_t version;
    if (zs_get_bytes(&c, ZS_MAGIC_LEN, &magic) || memcmp(magic, ZS_MAGIC, ZS_MAGIC_LEN))
        return zs_fail(err, ZS_E_NOT_RECORDING, "%s: offset 0: bad magic (not a zeek-spy recording)",
                       r->name);
    if (zs_get_varint(&c, &version))
        return zs_fail(err, ZS_E_NOT_RECORDING, "%s: offset 0: no format version", r->name);
    if (version == 0 || version > ZS_FORMAT_VERSION)
        return zs_fail(err, ZS_E_FORMAT_VERSION,
                       "%s: offset 0: format version %llu is newer than this converter reads (%d); "
                       "upgrade zeek-spy",
                       r->name, (unsigned long long)version, ZS_FORMAT_VERSION);
    r->version = (uint32_t)version;
    r->pos = (size_t)(c.p - r->frame.data);
    r->seen_preamble = 1;
    return 0;
}

/* Copies a length-prefixed string into r->strings; returns its offset. */
static int take_string(zs_reader *r, zs_cursor *c, size_t *off)
{
    const char *s;
    size_t n;
    if (zs_get_string(c, &s, &n) || zs_buf_reserve(&r->strings, n + 1))
        return -1;
    *off = r->strings.len;
    zs_put_bytes(&r->strings, s, n);
    zs_put_u8(&r->strings, 0);
    return 0;
}

static int decode_kv(zs_reader *r, zs_cursor *c, size_t *count)
{
    uint64_t n;
    size_t offs[2 * ZS_MAX_KV];
    if (zs_get_varint(c, &n) || n > ZS_MAX_KV)
        return -1;
    r->strings.len = 0;
    for (size_t i = 0; i < 2 * n; i++)
        if (take_string(r, c, &offs[i]))
            return -1;
    for (size_t i = 0; i < n; i++) {
        const char *base = (const char *)r->strings.data;
        r->kv[i] = (zs_kv){base + offs[2 * i], base + offs[2 * i + 1]};
        if (memchr(r->kv[i].key, '\0', offs[2 * i + 1] - offs[2 * i] - 1))
            return -1;
    }
    *count = n;
    return 0;
}

static int get_u32(zs_cursor *c, uint32_t *v)
{
    uint64_t x;
    if (zs_get_varint(c, &x) || x > UINT32_MAX)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

/* The next sample of the current batch (already validated). */
static int next_sample(zs_reader *r, zs_record *rec)
{
    uint64_t dt;
    rec->type = ZS_REC_SAMPLE;
    zs_get_varint(&r->batch_dt, &dt);
    zs_get_varint(&r->batch_id, &rec->sample.stack_id);
    r->t_us += dt;
    rec->sample.t_us = r->t_us;
    rec->sample.off_cpu = r->batch_off_cpu;
    r->batch_left--;
    return 0;
}

/* One decoder per record type, each filling its member of rec from the
 * payload c; -1 when the payload does not hold one. */

/* A format-4 frame; a kind this reader does not know, or a script frame
 * with no Func (it would read as native), makes the record bad. */
static int get_frame(zs_cursor *c, zs_frame *f)
{
    uint64_t v;
    if (zs_get_varint(c, &v))
        return -1;
    uint64_t first = v >> ZS_FRAME_KIND_BITS;
    switch (v & ((1u << ZS_FRAME_KIND_BITS) - 1)) {
    case ZS_FRAME_SCRIPT:
        f->func = first;
        return !first || zs_get_varint(c, &f->stmt) ? -1 : 0;
    case ZS_FRAME_NATIVE:
        *f = zs_native_frame(first);
        return 0;
    }
    return -1;
}

/* Fails with why as the error's words. */
static int malformed(zs_reader *r, const char *why)
{
    r->why = why;
    return -1;
}

/* Format 5: where stack id opens (its base's first frames, into
 * r->frames), and how many frames that is. */
static int decode_base(zs_reader *r, zs_cursor *c, uint64_t id, uint32_t pid, uint64_t *shared)
{
    uint64_t base_plus1;
    *shared = 0;
    if (zs_get_varint(c, &base_plus1))
        return -1;
    if (!base_plus1)
        return 0;
    int64_t at = zs_intern_find(&r->stack_index, zs_mix64(base_plus1 - 1), NULL, NULL, NULL);
    const struct kept_stack *b = at >= 0 ? &r->stacks[at] : NULL;
    if (base_plus1 > id || !b || b->pid != pid)
        return malformed(r, "a stack built on one not defined before it in that process");
    if (zs_get_varint(c, shared) || *shared == 0 || *shared > b->n)
        return malformed(r, "a stack sharing none or more frames than its base has");
    memcpy(r->frames, b->frames, *shared * sizeof *r->frames);
    return 0;
}

/* Format 5: keeps the stack just read for the stacks built on it. */
static int keep_stack(zs_reader *r, uint64_t id, uint32_t pid, size_t n)
{
    uint64_t h = zs_mix64(id); /* a bijection: the hash is the key */
    if (zs_intern_find(&r->stack_index, h, NULL, NULL, NULL) >= 0)
        return malformed(r, "a stack defined twice");
    if (r->kept_frames + n > ZS_MAX_KEPT_FRAMES)
        return malformed(r, "more stack frames than a reader keeps");
    zs_frame *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy || zs_grow(&r->stacks, &r->stacks_cap, r->nstacks + 1, sizeof *r->stacks, 256) ||
        zs_intern_add(&r->stack_index, h, (uint32_t)r->nstacks)) {
        free(copy);
        return malformed(r, "out of memory for the stack table");
    }
    memcpy(copy, r->frames, n * sizeof *copy);
    r->stacks[r->nstacks++] = (struct kept_stack){pid, (uint32_t)n, copy};
    r->kept_frames += n;
    return 0;
}

static int decode_stack(zs_reader *r, zs_cursor *c, zs_record *rec)
{
    uint64_t shared = 0, n;
    if (zs_get_varint(c, &rec->stack.id) || get_u32(c, &rec->stack.pid))
        return -1;
    if (r->version >= 5 && decode_base(r, c, rec->stack.id, rec->stack.pid, &shared))
        return -1;
    if (zs_get_varint(c, &n) || n > ZS_MAX_FRAMES - shared)
        return -1;
    for (size_t i = shared; i < shared + n; i++)
        if (r->version >= 4 ? get_frame(c, &r->frames[i])
                            : zs_get_varint(c, &r->frames[i].func) || zs_get_varint(c, &r->frames[i].stmt))
            return -1;
    rec->stack.nframes = shared + n;
    rec->stack.frames = r->frames;
    if (r->version >= 5 && keep_stack(r, rec->stack.id, rec->stack.pid, shared + n))
        return -1;
    return 0;
}

/* Checks the whole batch now: two columns of n varints that fill the
 * payload exactly. Samples are then handed out one by one (next_sample),
 * off_cpu for a SAMPLES_OFF_CPU batch. */
static int decode_samples(zs_reader *r, zs_cursor *c, zs_record *rec, int off_cpu)
{
    uint64_t n, v;
    if (zs_get_varint(c, &n) || n == 0 || n > (uint64_t)(c->end - c->p))
        return -1;
    r->batch_dt = *c;
    for (uint64_t i = 0; i < n; i++)
        if (zs_get_varint(c, &v))
            return -1;
    r->batch_id = (zs_cursor){c->p, c->end};
    r->batch_dt.end = c->p;
    for (uint64_t i = 0; i < n; i++)
        if (zs_get_varint(c, &v))
            return -1;
    if (c->p != c->end)
        return -1;
    r->batch_left = (size_t)n;
    r->batch_off_cpu = off_cpu;
    return next_sample(r, rec);
}

static int decode_snapshot(zs_cursor *c, zs_record *rec)
{
    uint64_t n;
    if (get_u32(c, &rec->snapshot.pid) || zs_get_varint(c, &rec->snapshot.addr) ||
        zs_get_varint(c, &n) || n > ZS_MAX_SNAPSHOT_BYTES ||
        zs_get_bytes(c, n, &rec->snapshot.data))
        return -1;
    rec->snapshot.len = n;
    return 0;
}

static int decode_event(zs_reader *r, zs_cursor *c, zs_record *rec)
{
    size_t off;
    if (zs_get_varint(c, &rec->event.t_us) || get_u32(c, &rec->event.pid) ||
        get_u32(c, &rec->event.kind) || zs_get_varint(c, &rec->event.value))
        return -1;
    r->strings.len = 0;
    if (take_string(r, c, &off))
        return -1;
    rec->event.message = (const char *)r->strings.data + off;
    return 0;
}

static int decode_nettime(zs_cursor *c, zs_record *rec)
{
    const uint8_t *p;
    if (zs_get_varint(c, &rec->nettime.t_us) || get_u32(c, &rec->nettime.pid) ||
        zs_get_bytes(c, 8, &p))
        return -1;
    memcpy(&rec->nettime.network_time, p, 8);
    return 0;
}

static int decode_load(zs_cursor *c, zs_record *rec)
{
    zs_load *l = &rec->load;
    uint64_t what;
    memset(l, 0, sizeof *l);
    if (zs_get_varint(c, &l->t_us) || get_u32(c, &l->pid) || zs_get_varint(c, &what) ||
        (what & ~(uint64_t)ZS_LOAD__ALL))
        return -1;
    l->what = (uint32_t)what;
    if ((what & ZS_LOAD_COUNTERS) &&
        (zs_get_varint(c, &l->received) || zs_get_varint(c, &l->dropped) ||
         zs_get_varint(c, &l->link) || zs_get_varint(c, &l->bytes)))
        return -1;
    if ((what & ZS_LOAD_LAG) && zs_get_varint(c, &l->lag_us))
        return -1;
    if ((what & ZS_LOAD_QUEUE) && zs_get_varint(c, &l->queue))
        return -1;
    return 0;
}

static int decode_symbol(zs_reader *r, zs_cursor *c, zs_record *rec)
{
    size_t off;
    if (get_u32(c, &rec->symbol.pid) || zs_get_varint(c, &rec->symbol.id))
        return -1;
    r->strings.len = 0;
    if (take_string(r, c, &off))
        return -1;
    rec->symbol.name = (const char *)r->strings.data + off;
    return 0;
}

/* The id counters of pid, made on first use; NULL past ZS_MAX_PIDS. */
static struct native_ids *ids_of(zs_reader *r, uint32_t pid)
{
    for (size_t i = 0; i < r->npids; i++)
        if (r->pids[i].pid == pid)
            return &r->pids[i];
    if (r->npids == ZS_MAX_PIDS)
        return NULL;
    if (zs_grow(&r->pids, &r->pids_cap, r->npids + 1, sizeof *r->pids, 8))
        return NULL;
    r->pids[r->npids] = (struct native_ids){pid, 0, 0};
    return &r->pids[r->npids++];
}

static int is_hex(const char *s)
{
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

static int decode_module(zs_reader *r, zs_cursor *c, zs_record *rec)
{
    zs_module *m = &rec->module.m;
    size_t build_id, path;
    if (get_u32(c, &rec->module.pid) || zs_get_varint(c, &m->id))
        return -1;
    r->strings.len = 0;
    if (take_string(r, c, &build_id) || take_string(r, c, &path) ||
        zs_get_varint(c, &m->start) || zs_get_varint(c, &m->end) ||
        zs_get_varint(c, &m->file_offset))
        return -1;
    m->build_id = (const char *)r->strings.data + build_id;
    m->path = (const char *)r->strings.data + path;
    size_t path_len = r->strings.len - path - 1; /* without its NUL */
    if (strlen(m->build_id) > ZS_MAX_BUILD_ID_HEX || !is_hex(m->build_id))
        return malformed(r, "module build-id is not hex or too long");
    if (path_len == 0 || path_len > ZS_MAX_MODULE_PATH || strlen(m->path) != path_len)
        return malformed(r, "module path empty, too long or with a NUL");
    if (m->start >= m->end)
        return malformed(r, "module start not below its end");
    struct native_ids *ids = ids_of(r, rec->module.pid);
    if (!ids)
        return malformed(r, "module of too many processes");
    if (m->id != ids->modules)
        return malformed(r, "module id out of order");
    ids->modules++;
    return 0;
}

static int decode_location(zs_reader *r, zs_cursor *c, zs_record *rec)
{
    zs_native_location *l = &rec->location.l;
    if (get_u32(c, &rec->location.pid) || zs_get_varint(c, &l->id) ||
        zs_get_varint(c, &l->module) || zs_get_varint(c, &l->address) ||
        zs_get_varint(c, &l->symbol))
        return -1;
    struct native_ids *ids = ids_of(r, rec->location.pid);
    if (!ids)
        return malformed(r, "location of too many processes");
    if (l->id != ids->locations)
        return malformed(r, "location id out of order");
    if (l->module > ids->modules)
        return malformed(r, "location in a module not defined before it");
    ids->locations++;
    return 0;
}

static int decode_lines(zs_reader *r, zs_cursor *c, zs_record *rec)
{
    zs_native_lines *l = &r->lines;
    uint64_t n;
    if (get_u32(c, &rec->lines.pid) || zs_get_varint(c, &l->location) || zs_get_varint(c, &n))
        return -1;
    if (n == 0 || n > ZS_MAX_INLINE)
        return malformed(r, "lines: none, or more than 16");
    l->n = (size_t)n;
    for (size_t i = 0; i < l->n; i++) {
        zs_native_line *line = &l->line[i];
        if (zs_get_varint(c, &line->function) || zs_get_varint(c, &line->file) ||
            zs_get_varint(c, &line->line))
            return -1;
        if (line->line == 0 || line->line > ZS_MAX_LINE)
            return malformed(r, "lines: a line number out of range");
    }
    struct native_ids *ids = ids_of(r, rec->lines.pid);
    if (!ids)
        return malformed(r, "lines of too many processes");
    if (l->location >= ids->locations)
        return malformed(r, "lines of a location not defined before them");
    rec->lines.l = l;
    return 0;
}

/* 0, -1 on a malformed payload, 1 for a record type of a later version. */
static int decode(zs_reader *r, uint8_t type, zs_cursor *c, zs_record *rec)
{
    rec->type = type;
    switch (type) {
    case ZS_REC_HEADER:
        rec->header.items = r->kv;
        return decode_kv(r, c, &rec->header.count);
    case ZS_REC_PROCESS:
        rec->process.items = r->kv;
        return get_u32(c, &rec->process.pid) || decode_kv(r, c, &rec->process.count) ? -1 : 0;
    case ZS_REC_STACK: return decode_stack(r, c, rec);
    case ZS_REC_SAMPLES: return decode_samples(r, c, rec, 0);
    case ZS_REC_SAMPLES_OFF_CPU: /* before format 7 a type this reader skips */
        return r->version >= 7 ? decode_samples(r, c, rec, 1) : 1;
    case ZS_REC_SNAPSHOT: return decode_snapshot(c, rec);
    case ZS_REC_EVENT: return decode_event(r, c, rec);
    case ZS_REC_NETTIME: return decode_nettime(c, rec);
    case ZS_REC_LOAD: return r->version >= 8 ? decode_load(c, rec) : 1;
    case ZS_REC_SYMBOL: return decode_symbol(r, c, rec);
    case ZS_REC_MODULE: return decode_module(r, c, rec);
    case ZS_REC_LOCATION: return decode_location(r, c, rec);
    case ZS_REC_LINES: return decode_lines(r, c, rec);
    case ZS_REC_STACK_WAITS: return zs_get_varint(c, &rec->stack_waits.stack_id) ? -1 : 0;
    case ZS_REC_NATIVE_LATE:
        return get_u32(c, &rec->native_late.pid) || zs_get_varint(c, &rec->native_late.t_us) ||
               zs_get_varint(c, &rec->native_late.stack_id) ? -1 : 0;
    case ZS_REC_TRAILER:
        return zs_get_varint(c, &rec->trailer.samples) || zs_get_varint(c, &rec->trailer.skipped) ||
               zs_get_varint(c, &rec->trailer.t_us) ? -1 : 0;
    }
    return 1; /* unknown type: skipped by the caller */
}

int zs_reader_next(zs_reader *r, zs_record *rec, zs_error *err)
{
    if (r->batch_left) {
        next_sample(r, rec);
        rec->offset = r->frame_offset;
        return 1;
    }
    for (;;) {
        if (r->at_end)
            return 0;
        if (r->pos >= r->frame.len) {
            if (r->unfinished) {
                r->at_end = 1;
                return 0;
            }
            int got = load_frame(r, err);
            if (got < 0)
                return -1;
            if (got == 0) {
                r->at_end = 1;
                if (!r->seen_preamble)
                    return zs_fail(err, ZS_E_NOT_RECORDING, "%s: no data", r->name);
                return 0;
            }
            if (!r->seen_preamble && read_preamble(r, err))
                return -1;
            continue;
        }

        zs_cursor c = {r->frame.data + r->pos, r->frame.data + r->frame.len};
        uint8_t type;
        uint64_t len;
        const uint8_t *payload;
        if (zs_get_u8(&c, &type) || zs_get_varint(&c, &len) ||
            zs_get_bytes(&c, (size_t)(len > SIZE_MAX ? SIZE_MAX : len), &payload)) {
            if (r->unfinished) { /* the cut-off end of the last frame */
                r->truncated = 1;
                r->truncated_offset = r->frame_offset;
                r->at_end = 1;
                return 0;
            }
            return corrupt(r, "record runs past the end of its zstd frame", err);
        }
        zs_cursor body = {payload, payload + len};
        r->why = NULL;
        int rc = decode(r, type, &body, rec);
        if (rc < 0)
            return corrupt(r, r->why ? r->why : "malformed record", err);
        if (!r->seen_header && !(rc == 0 && type == ZS_REC_HEADER))
            return corrupt(r, "first record is not a header", err);
        if (rc == 0 && type == ZS_REC_SNAPSHOT &&
            (r->snapshot_bytes += rec->snapshot.len) >
                ZS_SNAPSHOT_ALLOWANCE + (uint64_t)ZS_SNAPSHOT_RATIO * r->consumed)
            return zs_fail(err, ZS_E_CORRUPT,
                           "%s: offset %llu: snapshot regions add up to %llu MiB from %llu bytes "
                           "of file (a decompression bomb, not a recording)",
                           r->name, (unsigned long long)r->frame_offset,
                           (unsigned long long)(r->snapshot_bytes >> 20),
                           (unsigned long long)r->consumed);
        r->pos = (size_t)(c.p - r->frame.data);
        if (rc > 0) {
            r->skipped_records++;
            continue;
        }
        r->seen_header = 1;
        rec->offset = r->frame_offset;
        return 1;
    }
}

int zs_reader_truncated(const zs_reader *r, uint64_t *frame_offset)
{
    if (frame_offset)
        *frame_offset = r->truncated_offset;
    return r->truncated;
}

uint32_t zs_reader_format_version(const zs_reader *r) { return r->version; }
uint64_t zs_reader_skipped_records(const zs_reader *r) { return r->skipped_records; }
const char *zs_reader_name(const zs_reader *r) { return r->name; }

void zs_reader_close(zs_reader *r)
{
    if (!r)
        return;
    if (r->file)
        fclose(r->file);
    ZSTD_freeDCtx(r->dctx);
    free(r->in);
    zs_buf_free(&r->frame);
    zs_buf_free(&r->strings);
    free(r->pids);
    for (size_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i].frames);
    free(r->stacks);
    zs_intern_free(&r->stack_index);
    free(r->name);
    free(r);
}
