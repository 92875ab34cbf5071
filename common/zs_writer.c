/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "zs_codec.h"

/* Flushing early keeps the buffer from ever growing on the sampling path.
 * A zstd frame stays open across flushes (each flush makes everything
 * written so far decodable, so a killed recorder loses only what it had
 * not flushed) and ends after FRAME_RAW_MAX bytes of records: later
 * records are compressed against the earlier ones of their frame (a real
 * zeek's names and stacks repeat), where a frame a second, compressed
 * alone, made recordings a quarter bigger. */
enum { FLUSH_AT = 256 << 10, INITIAL_CAP = 1 << 20, FRAME_RAW_MAX = 8 << 20 };
/* A recording grows by a few KB a second, flushed once a second so that a
 * crash loses at most that second: each flush's cost, not the bytes, is what
 * the level decides. On a real zeek's recording at level 3 a flush costs
 * about 1/37 of level 18's (btultra), for a file 12 % larger; level 1 halves
 * level 3's time again for 12 % more (docs/performance.md, "The always-on
 * cost"). The window stays capped at 1 MiB: a sensor's memory. Its match
 * tables shrink to 16 KiB each (level 3's are 512 and 256 KiB): a second's
 * few KB then meet fewer cold cache lines, a flush costing 0.6 of level 3's
 * for a file 4 % larger (docs/performance.md, "seventh session"). */
enum { ZSTD_LEVEL = 3, ZSTD_WINDOW_LOG = 20, ZSTD_HASH_LOG = 14, ZSTD_CHAIN_LOG = 14 };
_Static_assert(FRAME_RAW_MAX + 2 * FLUSH_AT <= ZS_MAX_FRAME_BYTES,
               "a frame decompresses within what a reader takes");

struct zs_writer {
    int fd;
    char *path;
    zs_buf buf;
    zs_buf out;
    ZSTD_CCtx *cctx;
    uint64_t last_t_us;
    /* Samples wait here and go out as one SAMPLES record per flush: in
     * columns they compress to ~3 bytes a sample instead of ~4.2. A batch
     * is of one kind (pend_off_cpu): a sample of the other cuts it. */
    uint64_t pend_dt[ZS_SAMPLE_BATCH];
    uint64_t pend_id[ZS_SAMPLE_BATCH];
    size_t npend;
    int pend_off_cpu;
    uint64_t written;   /* bytes on disk, all of them decodable */
    uint64_t frame_raw; /* bytes of records in the open frame */
    int broken;         /* a write failed: the compressor is ahead of the file */
};

zs_writer *zs_writer_create(const char *path, uid_t uid, gid_t gid, zs_error *err)
{
    zs_writer *w = calloc(1, sizeof *w);
    if (!w) {
        zs_fail(err, ZS_E_NOMEM, "%s: writer", path);
        return NULL;
    }
    w->fd = -1;
    w->path = strdup(path);
    w->cctx = ZSTD_createCCtx();
    if (!w->path || !w->cctx || zs_buf_reserve(&w->buf, INITIAL_CAP)) {
        zs_fail(err, ZS_E_NOMEM, "%s: writer buffers", path);
        goto fail;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_windowLog, ZSTD_WINDOW_LOG);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_hashLog, ZSTD_HASH_LOG);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_chainLog, ZSTD_CHAIN_LOG);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (w->fd < 0) {
        zs_fail(err, errno == EACCES || errno == EPERM ? ZS_E_PERMISSION : ZS_E_OUTPUT,
                "%s: %s%s", path, strerror(errno),
                errno == EEXIST ? " (refusing to overwrite an existing file)" : "");
        goto fail;
    }
    if ((int)uid >= 0 && fchown(w->fd, uid, gid) != 0) {
        zs_fail(err, ZS_E_OUTPUT, "%s: cannot give the file to uid %d: %s", path, (int)uid,
                strerror(errno));
        unlink(path);
        goto fail;
    }
    zs_put_bytes(&w->buf, ZS_MAGIC, ZS_MAGIC_LEN);
    zs_put_varint(&w->buf, ZS_FORMAT_VERSION);
    return w;
fail:
    zs_writer_abandon(w);
    return NULL;
}

/* Every record: type, payload length, payload. The payload is encoded after
 * a length slot of maximum width, then moved down once its size is known. */
static size_t begin_record(zs_writer *w, zs_record_type type)
{
    zs_put_u8(&w->buf, (uint8_t)type);
    size_t at = w->buf.len;
    w->buf.len += ZS_VARINT_MAX;
    return at;
}

static void end_record(zs_writer *w, size_t at)
{
    size_t payload = w->buf.len - at - ZS_VARINT_MAX;
    uint8_t len[ZS_VARINT_MAX];
    zs_buf tmp = {len, 0, sizeof len};
    zs_put_varint(&tmp, payload);
    memcpy(w->buf.data + at, len, tmp.len);
    memmove(w->buf.data + at + tmp.len, w->buf.data + at + ZS_VARINT_MAX, payload);
    w->buf.len = at + tmp.len + payload;
}

static int reserve(zs_writer *w, size_t n, zs_error *err)
{
    if (zs_buf_reserve(&w->buf, n + 1 + ZS_VARINT_MAX))
        return zs_fail(err, ZS_E_NOMEM, "%s: record buffer", w->path);
    return 0;
}

static int maybe_flush(zs_writer *w, zs_error *err)
{
    return w->buf.len >= FLUSH_AT ? zs_writer_flush(w, err) : 0;
}

static int put_kv(zs_writer *w, const zs_kv *items, size_t count, zs_error *err)
{
    zs_put_varint(&w->buf, count);
    for (size_t i = 0; i < count; i++)
        if (zs_put_string(&w->buf, items[i].key) || zs_put_string(&w->buf, items[i].value))
            return zs_fail(err, ZS_E_NOMEM, "%s: record buffer", w->path);
    return 0;
}

int zs_writer_header(zs_writer *w, const zs_kv *items, size_t count, zs_error *err)
{
    if (reserve(w, 2 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_HEADER);
    if (put_kv(w, items, count, err))
        return -1;
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_process(zs_writer *w, uint32_t pid, const zs_kv *items, size_t count, zs_error *err)
{
    if (reserve(w, 3 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_PROCESS);
    zs_put_varint(&w->buf, pid);
    if (put_kv(w, items, count, err))
        return -1;
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_stack_from(zs_writer *w, uint64_t id, uint32_t pid, const zs_stack_base *from,
                         const zs_frame *frames, size_t n, zs_error *err)
{
    for (size_t i = 0; i < n; i++) /* no address of x86-64 or aarch64 comes near */
        if ((zs_frame_is_native(&frames[i]) ? frames[i].stmt : frames[i].func) > ZS_FRAME_FIRST_MAX)
            return zs_fail(err, ZS_E_TARGET, "%s: stack %llu: frame %zu out of range", w->path,
                           (unsigned long long)id, i);
    size_t shared = from->base_plus1 ? from->shared : 0;
    if (shared > n || (from->base_plus1 && (shared == 0 || from->base_plus1 > id)))
        return zs_fail(err, ZS_E_TARGET, "%s: stack %llu: base %llu sharing %zu of %zu frames", w->path,
                       (unsigned long long)id, (unsigned long long)from->base_plus1, shared, n);
    if (reserve(w, (5 + 2 * n) * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_STACK);
    zs_put_varint(&w->buf, id);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, from->base_plus1);
    if (from->base_plus1)
        zs_put_varint(&w->buf, shared);
    zs_put_varint(&w->buf, n - shared);
    for (size_t i = shared; i < n; i++) {
        int native = zs_frame_is_native(&frames[i]);
        uint64_t first = native ? frames[i].stmt : frames[i].func;
        zs_put_varint(&w->buf, first << ZS_FRAME_KIND_BITS | (native ? ZS_FRAME_NATIVE : ZS_FRAME_SCRIPT));
        if (!native)
            zs_put_varint(&w->buf, frames[i].stmt);
    }
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_stack(zs_writer *w, uint64_t id, uint32_t pid, const zs_frame *frames, size_t n,
                    zs_error *err)
{
    static const zs_stack_base none = {0, 0};
    return zs_writer_stack_from(w, id, pid, &none, frames, n, err);
}

static int emit_samples(zs_writer *w, zs_error *err)
{
    if (!w->npend)
        return 0;
    if (reserve(w, (1 + 2 * w->npend) * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, w->pend_off_cpu ? ZS_REC_SAMPLES_OFF_CPU : ZS_REC_SAMPLES);
    zs_put_varint(&w->buf, w->npend);
    for (size_t i = 0; i < w->npend; i++)
        zs_put_varint(&w->buf, w->pend_dt[i]);
    for (size_t i = 0; i < w->npend; i++)
        zs_put_varint(&w->buf, w->pend_id[i]);
    end_record(w, at);
    w->npend = 0;
    return 0;
}

int zs_writer_sample(zs_writer *w, uint64_t t_us, uint64_t stack_id, int off_cpu, zs_error *err)
{
    off_cpu = off_cpu != 0;
    if (w->npend && w->pend_off_cpu != off_cpu && emit_samples(w, err))
        return -1;
    w->pend_off_cpu = off_cpu;
    uint64_t dt = t_us >= w->last_t_us ? t_us - w->last_t_us : 0;
    w->last_t_us += dt;
    w->pend_dt[w->npend] = dt;
    w->pend_id[w->npend] = stack_id;
    if (++w->npend == ZS_SAMPLE_BATCH && emit_samples(w, err))
        return -1;
    return maybe_flush(w, err);
}

int zs_writer_snapshot(zs_writer *w, uint32_t pid, uint64_t addr, const void *data, size_t len,
                       zs_error *err)
{
    if (len > ZS_MAX_SNAPSHOT_BYTES)
        return zs_fail(err, ZS_E_TARGET, "snapshot region of %zu bytes is too large", len);
    if (reserve(w, 3 * ZS_VARINT_MAX + len, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_SNAPSHOT);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, addr);
    zs_put_varint(&w->buf, len);
    zs_put_bytes(&w->buf, data, len);
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_event(zs_writer *w, uint64_t t_us, uint32_t pid, zs_event_kind kind, uint64_t value,
                    const char *message, zs_error *err)
{
    if (reserve(w, 4 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_EVENT);
    zs_put_varint(&w->buf, t_us);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, kind);
    zs_put_varint(&w->buf, value);
    if (zs_put_string(&w->buf, message ? message : ""))
        return zs_fail(err, ZS_E_NOMEM, "%s: record buffer", w->path);
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_symbol(zs_writer *w, uint32_t pid, uint64_t id, const char *name, zs_error *err)
{
    if (reserve(w, 2 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_SYMBOL);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, id);
    if (zs_put_string(&w->buf, name))
        return zs_fail(err, ZS_E_NOMEM, "%s: record buffer", w->path);
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_module(zs_writer *w, uint32_t pid, const zs_module *m, zs_error *err)
{
    if (reserve(w, 5 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_MODULE);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, m->id);
    if (zs_put_string(&w->buf, m->build_id) || zs_put_string(&w->buf, m->path) ||
        zs_buf_reserve(&w->buf, 3 * ZS_VARINT_MAX))
        return zs_fail(err, ZS_E_NOMEM, "%s: record buffer", w->path);
    zs_put_varint(&w->buf, m->start);
    zs_put_varint(&w->buf, m->end);
    zs_put_varint(&w->buf, m->file_offset);
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_location(zs_writer *w, uint32_t pid, const zs_native_location *l, zs_error *err)
{
    if (reserve(w, 6 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_LOCATION);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, l->id);
    zs_put_varint(&w->buf, l->module);
    zs_put_varint(&w->buf, l->address);
    zs_put_varint(&w->buf, l->symbol);
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_lines(zs_writer *w, uint32_t pid, const zs_native_lines *l, zs_error *err)
{
    if (l->n == 0 || l->n > ZS_MAX_INLINE)
        return zs_fail(err, ZS_E_USAGE, "%s: %zu lines for one location", w->path, l->n);
    if (reserve(w, (3 + 3 * l->n) * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_LINES);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, l->location);
    zs_put_varint(&w->buf, l->n);
    for (size_t i = 0; i < l->n; i++) {
        zs_put_varint(&w->buf, l->line[i].function);
        zs_put_varint(&w->buf, l->line[i].file);
        zs_put_varint(&w->buf, l->line[i].line);
    }
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_nettime(zs_writer *w, uint64_t t_us, uint32_t pid, double network_time,
                      zs_error *err)
{
    if (reserve(w, 2 * ZS_VARINT_MAX + 8, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_NETTIME);
    zs_put_varint(&w->buf, t_us);
    zs_put_varint(&w->buf, pid);
    zs_put_bytes(&w->buf, &network_time, 8); /* x86_64: little-endian IEEE 754 */
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_load(zs_writer *w, const zs_load *l, zs_error *err)
{
    if (reserve(w, 9 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_LOAD);
    zs_put_varint(&w->buf, l->t_us);
    zs_put_varint(&w->buf, l->pid);
    zs_put_varint(&w->buf, l->what & ZS_LOAD__ALL);
    if (l->what & ZS_LOAD_COUNTERS) {
        zs_put_varint(&w->buf, l->received);
        zs_put_varint(&w->buf, l->dropped);
        zs_put_varint(&w->buf, l->link);
        zs_put_varint(&w->buf, l->bytes);
    }
    if (l->what & ZS_LOAD_LAG)
        zs_put_varint(&w->buf, l->lag_us);
    if (l->what & ZS_LOAD_QUEUE)
        zs_put_varint(&w->buf, l->queue);
    end_record(w, at);
    return maybe_flush(w, err);
}

uint64_t zs_writer_last_t_us(const zs_writer *w) { return w->last_t_us; }

int zs_writer_stack_waits(zs_writer *w, uint64_t stack_id, zs_error *err)
{
    if (reserve(w, ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_STACK_WAITS);
    zs_put_varint(&w->buf, stack_id);
    end_record(w, at);
    return maybe_flush(w, err);
}

int zs_writer_native_late(zs_writer *w, uint32_t pid, uint64_t t_us, uint64_t stack_id, zs_error *err)
{
    /* After the sample it names: the batch that may hold it goes first. */
    if (w->npend && emit_samples(w, err))
        return -1;
    if (reserve(w, 3 * ZS_VARINT_MAX, err))
        return -1;
    size_t at = begin_record(w, ZS_REC_NATIVE_LATE);
    zs_put_varint(&w->buf, pid);
    zs_put_varint(&w->buf, t_us);
    zs_put_varint(&w->buf, stack_id);
    end_record(w, at);
    return maybe_flush(w, err);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Compresses the buffer into the open frame, flushed (end: the frame
 * ended too), and writes it out in one write. */
static int compress_out(zs_writer *w, int end, zs_error *err)
{
    if (w->broken)
        return zs_fail(err, ZS_E_OUTPUT, "%s: an earlier write failed", w->path);
    ZSTD_inBuffer in = {w->buf.data, w->buf.len, 0};
    w->out.len = 0;
    size_t left;
    do {
        if (zs_buf_reserve(&w->out, ZSTD_compressBound(in.size - in.pos) + ZSTD_CStreamOutSize()))
            return zs_fail(err, ZS_E_NOMEM, "%s: compression buffer", w->path);
        ZSTD_outBuffer out = {w->out.data, w->out.cap, w->out.len};
        left = ZSTD_compressStream2(w->cctx, &out, &in, end ? ZSTD_e_end : ZSTD_e_flush);
        if (ZSTD_isError(left))
            return zs_fail(err, ZS_E_OUTPUT, "%s: zstd: %s", w->path, ZSTD_getErrorName(left));
        w->out.len = out.pos;
    } while (left != 0 || in.pos < in.size);
    if (write_all(w->fd, w->out.data, w->out.len)) {
        int e = errno;
        /* Cut the partial write off: what is on disk stays decodable. */
        if (ftruncate(w->fd, (off_t)w->written) == 0)
            lseek(w->fd, (off_t)w->written, SEEK_SET);
        w->broken = 1;
        return zs_fail(err, ZS_E_OUTPUT, "%s: write failed at offset %llu: %s", w->path,
                       (unsigned long long)w->written, strerror(e ? e : ENOSPC));
    }
    w->written += w->out.len;
    w->frame_raw = end ? 0 : w->frame_raw + w->buf.len;
    w->buf.len = 0;
    return 0;
}

static int flush(zs_writer *w, int end, zs_error *err)
{
    if (emit_samples(w, err))
        return -1;
    if (w->buf.len == 0 && (!end || w->frame_raw == 0))
        return 0;
    return compress_out(w, end || w->frame_raw + w->buf.len >= FRAME_RAW_MAX, err);
}

int zs_writer_flush(zs_writer *w, zs_error *err) { return flush(w, 0, err); }
int zs_writer_end_frame(zs_writer *w, zs_error *err) { return flush(w, 1, err); }

int zs_writer_close(zs_writer *w, uint64_t samples, uint64_t skipped, uint64_t end_t_us,
                    zs_error *err)
{
    int rc = emit_samples(w, err);
    if (rc == 0)
        rc = reserve(w, 3 * ZS_VARINT_MAX, err);
    if (rc == 0) {
        size_t at = begin_record(w, ZS_REC_TRAILER);
        zs_put_varint(&w->buf, samples);
        zs_put_varint(&w->buf, skipped);
        zs_put_varint(&w->buf, end_t_us);
        end_record(w, at);
        rc = compress_out(w, 1, err);
    }
    if (rc == 0 && fsync(w->fd) != 0 && errno != EINVAL)
        rc = zs_fail(err, ZS_E_OUTPUT, "%s: fsync: %s", w->path, strerror(errno));
    zs_writer_abandon(w);
    return rc;
}

void zs_writer_abandon(zs_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0) {
        close(w->fd);
        /* Not one frame reached the disk (full from the start): an empty
         * file is no recording, so leave none behind. */
        if (w->written == 0)
            unlink(w->path);
    }
    ZSTD_freeCCtx(w->cctx);
    zs_buf_free(&w->buf);
    zs_buf_free(&w->out);
    free(w->path);
    free(w);
}

uint64_t zs_writer_bytes_written(const zs_writer *w) { return w->written; }
const char *zs_writer_path(const zs_writer *w) { return w->path; }
