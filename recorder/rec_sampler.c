#include "rec_sampler.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "rec_memory.h"

/* A std::vector header as read: begin, end, end of storage. */
typedef struct vec {
    uint64_t begin, end, cap;
} vec;

/* Arrays read speculatively in the first call, at the address and size the
 * previous sample found: vectors rarely move, so usually that saves a call. */
enum { SPECULATE_MAX = 128 };

struct rec_sampler {
    pid_t pid;
    const zs_layout *layout;
    uint64_t call_stack, frame_stack;
    size_t max_frames;
    int nonblocking;

    /* Copied in the window. */
    vec cs, fs, cs_again, fs_again;
    uint8_t *callinfo;         /* max_frames * callinfo_size */
    uint64_t *frame_ptrs;      /* frame-stack model: g_frame_stack's elements */
    uint64_t next_stmt;        /* frame-stack model: innermost Frame's next_stmt */
    uint64_t *frame_fields;    /* callinfo-frame model: per frame [function .. next_stmt] */
    int frame_lo;              /* offset of the first of those fields in a Frame */
    size_t frame_span;         /* bytes read per frame in that model */
    size_t n;                  /* CallInfo entries copied */
    int cut;

    uint64_t network_time_addr;
    double network_time;       /* Zeek's packet clock, read in the first call */
    uint64_t spec_cs_begin, spec_fs_begin;
    size_t spec_cs_n, spec_fs_n;
    uint64_t calls;            /* process_vm_readv calls, for the benchmark */
    rec_sampler_rider rider;
    void *rider_ctx;
    ssize_t rider_got;
    /* The model's last call, chosen once: what each frame is executing. */
    rec_read_result (*read_frames)(rec_sampler *s, int64_t nfs);
};

static rec_read_result read_frame_stack(rec_sampler *s, int64_t nfs);
static rec_read_result read_callinfo_frames(rec_sampler *s, int64_t nfs);

rec_sampler *rec_sampler_new(const rec_target *t, size_t max_frames, int nonblocking)
{
    rec_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const zs_layout *l = &t->layout;
    s->pid = t->pid;
    s->layout = l;
    s->call_stack = t->call_stack;
    s->frame_stack = t->frame_stack;
    s->network_time_addr = t->network_time;
    s->max_frames = max_frames;
    s->nonblocking = nonblocking;
    s->read_frames = l->model == ZS_MODEL_FRAME_STACK ? read_frame_stack : read_callinfo_frames;
    int hi = l->frame_function > l->frame_next_stmt ? l->frame_function : l->frame_next_stmt;
    s->frame_lo = l->frame_function < l->frame_next_stmt ? l->frame_function : l->frame_next_stmt;
    s->frame_span = (size_t)(hi - s->frame_lo) + 8;
    s->callinfo = malloc(max_frames * (size_t)l->callinfo_size);
    s->frame_ptrs = malloc(max_frames * sizeof *s->frame_ptrs);
    s->frame_fields = malloc(max_frames * s->frame_span);
    if (!s->callinfo || !s->frame_ptrs || !s->frame_fields) {
        rec_sampler_free(s);
        return NULL;
    }
    return s;
}

void rec_sampler_free(rec_sampler *s)
{
    if (!s)
        return;
    free(s->callinfo);
    free(s->frame_ptrs);
    free(s->frame_fields);
    free(s);
}

uint64_t rec_sampler_calls(const rec_sampler *s) { return s->calls; }

void rec_sampler_set_rider(rec_sampler *s, rec_sampler_rider fn, void *ctx)
{
    s->rider = fn;
    s->rider_ctx = ctx;
}

ssize_t rec_sampler_rider_got(const rec_sampler *s) { return s->rider_got; }

double rec_sampler_network_time(const rec_sampler *s) { return s->network_time; }

static uint64_t field(const uint8_t *p, int off)
{
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}

#define IOV(ptr, len) ((struct iovec){(void *)(ptr), (len)})
#define RIOV(addr, len) ((struct iovec){(void *)(uintptr_t)(addr), (len)})

/* Entries of a vector of elem-byte elements, or -1 when it is not one. */
static int64_t entries(const vec *v, uint64_t elem)
{
    if (v->end < v->begin || (v->end - v->begin) % elem)
        return -1;
    return (int64_t)((v->end - v->begin) / elem);
}

static size_t speculate(const vec *v, uint64_t elem, size_t max)
{
    uint64_t cap = v->cap > v->begin ? (v->cap - v->begin) / elem : 0;
    if (cap > max)
        cap = max;
    return cap > SPECULATE_MAX ? SPECULATE_MAX : (size_t)cap;
}

static ssize_t readv_counted(rec_sampler *s, const struct iovec *l, const struct iovec *r, size_t n)
{
    s->calls++;
    return process_vm_readv(s->pid, l, n, r, n, 0);
}

/* process_vm_readv takes at most IOV_MAX iovecs a call: a deeper 8.1+
 * stack (a frame each, plus the nonblocking re-read of the headers, which
 * stays last) takes several calls. Returns the bytes read in all. */
static ssize_t readv_chunked(rec_sampler *s, const struct iovec *l, const struct iovec *r, size_t n)
{
    ssize_t got = 0;
    for (size_t at = 0; at < n; at += IOV_MAX) {
        size_t k = n - at < IOV_MAX ? n - at : IOV_MAX;
        ssize_t one = readv_counted(s, l + at, r + at, k);
        if (one < 0)
            return one;
        got += one;
    }
    return got;
}

static size_t total(const struct iovec *v, size_t n)
{
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += v[i].iov_len;
    return t;
}

/* Call 1: the vector headers, and speculatively their arrays. Returns the
 * iovec count; *headers is how many of them are the headers, *spec_ci and
 * *spec_fs the index of each speculative array (0: none). */
static size_t first_call(rec_sampler *s, struct iovec *local, struct iovec *remote,
                         size_t *headers, size_t *spec_ci, size_t *spec_fs)
{
    const zs_layout *l = s->layout;
    const int old_model = l->model == ZS_MODEL_FRAME_STACK;
    size_t k = 0;
    local[k] = IOV(&s->cs, sizeof s->cs);
    remote[k++] = RIOV(s->call_stack + (uint64_t)l->vector_begin, sizeof s->cs);
    if (old_model) {
        local[k] = IOV(&s->fs, sizeof s->fs);
        remote[k++] = RIOV(s->frame_stack + (uint64_t)l->vector_begin, sizeof s->fs);
    }
    if (s->network_time_addr) {
        local[k] = IOV(&s->network_time, 8);
        remote[k++] = RIOV(s->network_time_addr, 8);
    }
    *headers = k;
    *spec_ci = *spec_fs = 0;
    if (s->spec_cs_n) {
        *spec_ci = k;
        local[k] = IOV(s->callinfo, s->spec_cs_n * (size_t)l->callinfo_size);
        remote[k++] = RIOV(s->spec_cs_begin, s->spec_cs_n * (size_t)l->callinfo_size);
    }
    if (old_model && s->spec_fs_n) {
        *spec_fs = k;
        local[k] = IOV(s->frame_ptrs, s->spec_fs_n * 8);
        remote[k++] = RIOV(s->spec_fs_begin, s->spec_fs_n * 8);
    }
    return k;
}

void rec_sampler_warm(rec_sampler *s)
{
    struct iovec local[5], remote[5];
    size_t headers, spec_ci, spec_fs;
    size_t k = first_call(s, local, remote, &headers, &spec_ci, &spec_fs);
    process_vm_readv(s->pid, local, k, remote, k, 0);
}

/* Calls 1 and 2, the same for every model: the vector headers (and
 * network_time), the CallInfo array and, frame-stack model, the top of
 * g_frame_stack. *nfs is that vector's length. */
static rec_read_result read_arrays(rec_sampler *s, int64_t *nfs_out)
{
    const zs_layout *l = s->layout;
    const size_t ci_size = (size_t)l->callinfo_size;
    const int old_model = l->model == ZS_MODEL_FRAME_STACK;
    const rec_read_result bad = s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
    struct iovec local[5], remote[5];
    size_t headers, spec_ci, spec_fs;
    size_t k = first_call(s, local, remote, &headers, &spec_ci, &spec_fs);
    ssize_t got = readv_counted(s, local, remote, k);
    if (got < (ssize_t)total(local, headers))
        return REC_READ_FAILED;
    int64_t n = entries(&s->cs, ci_size), nfs = old_model ? entries(&s->fs, 8) : 0;
    if (n < 0 || nfs < 0)
        return bad;
    s->cut = (size_t)n > s->max_frames;
    /* Keep the outermost frames: they name the event being handled. */
    s->n = s->cut ? s->max_frames : (size_t)n;
    if ((size_t)nfs > s->max_frames)
        nfs = (int64_t)s->max_frames;
    *nfs_out = nfs;
    int ci_ok = spec_ci && got >= (ssize_t)total(local, spec_ci + 1) &&
                s->cs.begin == s->spec_cs_begin && s->n <= s->spec_cs_n;
    int fs_ok = !old_model || (spec_fs && got >= (ssize_t)total(local, spec_fs + 1) &&
                               s->fs.begin == s->spec_fs_begin && (size_t)nfs <= s->spec_fs_n);
    s->spec_cs_begin = s->cs.begin;
    s->spec_cs_n = speculate(&s->cs, ci_size, s->max_frames);
    s->spec_fs_begin = s->fs.begin;
    s->spec_fs_n = old_model ? speculate(&s->fs, 8, s->max_frames) : 0;
    if (s->n == 0 || (ci_ok && (fs_ok || nfs == 0)))
        return REC_READ_OK;

    /* Call 2, only when the vectors moved or grew: the arrays exactly. */
    k = 0;
    local[k] = IOV(s->callinfo, s->n * ci_size);
    remote[k++] = RIOV(s->cs.begin, s->n * ci_size);
    if (old_model && nfs > 0) {
        local[k] = IOV(&s->frame_ptrs[nfs - 1], 8);
        remote[k++] = RIOV(s->fs.end - 8, 8);
    }
    return readv_counted(s, local, remote, k) == (ssize_t)total(local, k) ? REC_READ_OK : bad;
}

/* Frame-stack model (up to 8.0), last call: the innermost Frame's
 * next_stmt; nonblocking re-reads both headers in the same call to detect a
 * stack that moved meanwhile. */
static rec_read_result read_frame_stack(rec_sampler *s, int64_t nfs)
{
    const zs_layout *l = s->layout;
    struct iovec local[3], remote[3];
    uint64_t top = nfs > 0 ? s->frame_ptrs[nfs - 1] : 0;
    size_t k = 0;
    s->next_stmt = 0;
    if (top) {
        local[k] = IOV(&s->next_stmt, 8);
        remote[k++] = RIOV(top + (uint64_t)l->frame_next_stmt, 8);
    }
    if (s->nonblocking) {
        local[k] = IOV(&s->cs_again, sizeof s->cs_again);
        remote[k++] = RIOV(s->call_stack + (uint64_t)l->vector_begin, sizeof s->cs_again);
        local[k] = IOV(&s->fs_again, sizeof s->fs_again);
        remote[k++] = RIOV(s->frame_stack + (uint64_t)l->vector_begin, sizeof s->fs_again);
    }
    if (k && readv_counted(s, local, remote, k) != (ssize_t)total(local, k))
        return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
    if (s->nonblocking && (s->cs.begin != s->cs_again.begin || s->cs.end != s->cs_again.end ||
                           s->fs.begin != s->fs_again.begin || s->fs.end != s->fs_again.end))
        return REC_READ_TORN;
    return REC_READ_OK;
}

/* CallInfo-frame model (8.1 on), last call: function and next_stmt of every
 * Frame, which lives on zeek's C++ stack and must be copied now. */
static rec_read_result read_callinfo_frames(rec_sampler *s, int64_t nfs)
{
    (void)nfs;
    const zs_layout *l = s->layout;
    const size_t ci_size = (size_t)l->callinfo_size;
    const rec_read_result bad = s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
    struct iovec lv[ZS_MAX_FRAMES + 2], rv[ZS_MAX_FRAMES + 2]; /* + re-read, rider */
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t frame = field(s->callinfo + i * ci_size, l->callinfo_frame);
        if (!frame || frame % 8)
            return bad;
        lv[k] = IOV((uint8_t *)s->frame_fields + i * s->frame_span, s->frame_span);
        rv[k++] = RIOV(frame + (uint64_t)s->frame_lo, s->frame_span);
    }
    if (s->nonblocking) {
        lv[k] = IOV(&s->cs_again, sizeof s->cs_again);
        rv[k++] = RIOV(s->call_stack + (uint64_t)l->vector_begin, sizeof s->cs_again);
    }
    /* The rider last, where a partial read cuts only it; and only in a
     * single call, where a short read cannot hide behind the next one. */
    size_t needed = total(lv, k);
    int rides = s->rider && k < IOV_MAX &&
                s->rider(s->rider_ctx, field(s->callinfo, l->callinfo_frame), &lv[k], &rv[k]) > 0;
    ssize_t got = readv_chunked(s, lv, rv, k + (size_t)rides);
    if (got < (ssize_t)needed)
        return bad;
    if (rides)
        s->rider_got = got - (ssize_t)needed;
    if (s->nonblocking && (s->cs.begin != s->cs_again.begin || s->cs.end != s->cs_again.end))
        return REC_READ_TORN;
    return REC_READ_OK;
}

/* The Func of frame i as read, whichever the model. */
static uint64_t frame_func(const rec_sampler *s, size_t i)
{
    const zs_layout *l = s->layout;
    if (l->model == ZS_MODEL_FRAME_STACK)
        return field(s->callinfo + i * (size_t)l->callinfo_size, l->callinfo_func);
    return field((const uint8_t *)s->frame_fields + i * s->frame_span,
                 l->frame_function - s->frame_lo);
}

rec_read_result rec_sampler_read(rec_sampler *s)
{
    int64_t nfs = 0;
    s->rider_got = -1;
    rec_read_result r = read_arrays(s, &nfs);
    if (r != REC_READ_OK || s->n == 0)
        return r;
    if ((r = s->read_frames(s, nfs)) != REC_READ_OK)
        return r;
    /* Nonblocking: a Func pointer caught mid-update is not a frame. */
    for (size_t i = 0; s->nonblocking && i < s->n; i++) {
        uint64_t func = frame_func(s, i);
        if (!func || func % 8)
            return REC_READ_TORN;
    }
    return REC_READ_OK;
}

size_t rec_sampler_frames(const rec_sampler *s, zs_frame *out, int *cut)
{
    const zs_layout *l = s->layout;
    *cut = s->cut;
    if (l->model == ZS_MODEL_FRAME_STACK) {
        /* Outer frames execute the call site of the next CallInfo; the
         * innermost script frame its Frame's next_stmt. */
        for (size_t i = 0; i < s->n; i++) {
            const uint8_t *ci = s->callinfo + i * (size_t)l->callinfo_size;
            out[i].func = field(ci, l->callinfo_func);
            out[i].stmt = i + 1 < s->n ? field(s->callinfo + (i + 1) * (size_t)l->callinfo_size,
                                               l->callinfo_call)
                                       : s->next_stmt;
        }
        if (s->cut && s->n)
            out[s->n - 1].stmt = 0; /* the real innermost frame was cut off */
    } else {
        for (size_t i = 0; i < s->n; i++) {
            const uint8_t *f = (const uint8_t *)s->frame_fields + i * s->frame_span;
            out[i].func = field(f, l->frame_function - s->frame_lo);
            out[i].stmt = field(f, l->frame_next_stmt - s->frame_lo);
        }
    }
    return s->n;
}

size_t rec_sampler_frame_addrs(const rec_sampler *s, uint64_t *out)
{
    const zs_layout *l = s->layout;
    if (l->model != ZS_MODEL_CALLINFO_FRAME)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        out[i] = field(s->callinfo + i * (size_t)l->callinfo_size, l->callinfo_frame);
    return s->n;
}

uint64_t rec_sampler_outermost_frame(const rec_sampler *s)
{
    const zs_layout *l = s->layout;
    if (l->model != ZS_MODEL_CALLINFO_FRAME || !s->n)
        return 0;
    return field(s->callinfo, l->callinfo_frame);
}
