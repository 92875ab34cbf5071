#include "rec_sampler.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "rec_sampler_priv.h"

/* Arrays read speculatively in the first call, at the address and size the
 * previous sample found: vectors rarely move, so usually that saves a call. */
enum { SPECULATE_MAX = 128 };

rec_sampler *rec_sampler_new(const rec_target *t, size_t max_frames, int nonblocking)
{
    rec_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const zs_layout *l = &t->layout;
    s->pid = t->pid;
    s->layout = l;
    s->model = rec_model_of(l->model);
    s->call_stack = t->call_stack;
    s->frame_stack = t->frame_stack;
    s->network_time_addr = t->network_time;
    s->max_frames = max_frames;
    s->nonblocking = nonblocking;
    s->callinfo = malloc(max_frames * (size_t)l->callinfo_size);
    s->frame_ptrs = malloc(max_frames * sizeof *s->frame_ptrs);
    if (!s->model || !s->callinfo || !s->frame_ptrs ||
        !(s->model_state = s->model->state_new(l, max_frames))) {
        rec_sampler_free(s);
        return NULL;
    }
    return s;
}

void rec_sampler_free(rec_sampler *s)
{
    if (!s)
        return;
    if (s->model_state)
        s->model->state_free(s->model_state);
    free(s->callinfo);
    free(s->frame_ptrs);
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

/* Entries of a vector of elem-byte elements, or -1 when it is not one. */
static int64_t entries(const rec_vec *v, uint64_t elem)
{
    if (v->end < v->begin || (v->end - v->begin) % elem)
        return -1;
    return (int64_t)((v->end - v->begin) / elem);
}

static size_t speculate(const rec_vec *v, uint64_t elem, size_t max)
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
 * stays last) takes several calls. */
ssize_t rec_sampler_readv(rec_sampler *s, const struct iovec *l, const struct iovec *r, size_t n)
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

size_t rec_iov_total(const struct iovec *v, size_t n)
{
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += v[i].iov_len;
    return t;
}

size_t rec_sampler_reread(rec_sampler *s, struct iovec *l, struct iovec *r)
{
    if (!s->nonblocking)
        return 0;
    size_t k = 0;
    l[k] = REC_IOV(&s->cs_again, sizeof s->cs_again);
    r[k++] = REC_RIOV(s->call_stack + (uint64_t)s->layout->vector_begin, sizeof s->cs_again);
    if (s->frame_stack) {
        l[k] = REC_IOV(&s->fs_again, sizeof s->fs_again);
        r[k++] = REC_RIOV(s->frame_stack + (uint64_t)s->layout->vector_begin, sizeof s->fs_again);
    }
    return k;
}

int rec_sampler_moved(const rec_sampler *s)
{
    return s->nonblocking &&
           (s->cs.begin != s->cs_again.begin || s->cs.end != s->cs_again.end ||
            (s->frame_stack && (s->fs.begin != s->fs_again.begin || s->fs.end != s->fs_again.end)));
}

/* Call 1: the vector headers, and speculatively their arrays. Returns the
 * iovec count; *headers is how many of them are the headers, *spec_ci and
 * *spec_fs the index of each speculative array (0: none). */
static size_t first_call(rec_sampler *s, struct iovec *local, struct iovec *remote,
                         size_t *headers, size_t *spec_ci, size_t *spec_fs)
{
    const zs_layout *l = s->layout;
    const int second = s->frame_stack != 0;
    size_t k = 0;
    local[k] = REC_IOV(&s->cs, sizeof s->cs);
    remote[k++] = REC_RIOV(s->call_stack + (uint64_t)l->vector_begin, sizeof s->cs);
    if (second) {
        local[k] = REC_IOV(&s->fs, sizeof s->fs);
        remote[k++] = REC_RIOV(s->frame_stack + (uint64_t)l->vector_begin, sizeof s->fs);
    }
    if (s->network_time_addr) {
        local[k] = REC_IOV(&s->network_time, 8);
        remote[k++] = REC_RIOV(s->network_time_addr, 8);
    }
    *headers = k;
    *spec_ci = *spec_fs = 0;
    if (s->spec_cs_n) {
        *spec_ci = k;
        local[k] = REC_IOV(s->callinfo, s->spec_cs_n * (size_t)l->callinfo_size);
        remote[k++] = REC_RIOV(s->spec_cs_begin, s->spec_cs_n * (size_t)l->callinfo_size);
    }
    if (second && s->spec_fs_n) {
        *spec_fs = k;
        local[k] = REC_IOV(s->frame_ptrs, s->spec_fs_n * 8);
        remote[k++] = REC_RIOV(s->spec_fs_begin, s->spec_fs_n * 8);
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
 * network_time), the CallInfo array and, where the model has a second
 * vector (g_frame_stack), its top element. */
static rec_read_result read_arrays(rec_sampler *s)
{
    const zs_layout *l = s->layout;
    const size_t ci_size = (size_t)l->callinfo_size;
    const int second = s->frame_stack != 0;
    const rec_read_result bad = rec_sampler_bad(s);
    struct iovec local[6], remote[6]; /* first_call's, and the rider last */
    size_t headers, spec_ci, spec_fs;
    size_t k = first_call(s, local, remote, &headers, &spec_ci, &spec_fs);
    /* Last, where a partial read (a speculative array gone) cuts only it. */
    size_t needed = rec_iov_total(local, k);
    int rides = s->rider && s->rider(s->rider_ctx, 0, 1, &local[k], &remote[k]) > 0;
    ssize_t got = readv_counted(s, local, remote, k + (size_t)rides);
    if (got < (ssize_t)rec_iov_total(local, headers))
        return REC_READ_FAILED;
    if (rides && got >= (ssize_t)needed)
        s->rider_got = got - (ssize_t)needed;
    int64_t n = entries(&s->cs, ci_size), nfs = second ? entries(&s->fs, 8) : 0;
    if (n < 0 || nfs < 0)
        return bad;
    s->cut = (size_t)n > s->max_frames;
    /* Keep the outermost frames: they name the event being handled. */
    s->n = s->cut ? s->max_frames : (size_t)n;
    if ((size_t)nfs > s->max_frames)
        nfs = (int64_t)s->max_frames;
    s->nfs = nfs;
    int ci_ok = spec_ci && got >= (ssize_t)rec_iov_total(local, spec_ci + 1) &&
                s->cs.begin == s->spec_cs_begin && s->n <= s->spec_cs_n;
    int fs_ok = !second || (spec_fs && got >= (ssize_t)rec_iov_total(local, spec_fs + 1) &&
                               s->fs.begin == s->spec_fs_begin && (size_t)nfs <= s->spec_fs_n);
    s->spec_cs_begin = s->cs.begin;
    s->spec_cs_n = speculate(&s->cs, ci_size, s->max_frames);
    s->spec_fs_begin = s->fs.begin;
    s->spec_fs_n = second ? speculate(&s->fs, 8, s->max_frames) : 0;
    if (s->n == 0 || (ci_ok && (fs_ok || nfs == 0)))
        return REC_READ_OK;

    /* Call 2, only when the vectors moved or grew: the arrays exactly. */
    k = 0;
    local[k] = REC_IOV(s->callinfo, s->n * ci_size);
    remote[k++] = REC_RIOV(s->cs.begin, s->n * ci_size);
    if (second && nfs > 0) {
        local[k] = REC_IOV(&s->frame_ptrs[nfs - 1], 8);
        remote[k++] = REC_RIOV(s->fs.end - 8, 8);
    }
    return readv_counted(s, local, remote, k) == (ssize_t)rec_iov_total(local, k) ? REC_READ_OK : bad;
}

rec_read_result rec_sampler_read(rec_sampler *s)
{
    s->rider_got = -1;
    rec_read_result r = read_arrays(s);
    if (r != REC_READ_OK || s->n == 0)
        return r;
    if ((r = s->model->read_frames(s)) != REC_READ_OK)
        return r;
    /* Nonblocking: a Func pointer caught mid-update is not a frame. */
    for (size_t i = 0; s->nonblocking && i < s->n; i++) {
        uint64_t func = s->model->frame_func(s, i);
        if (!func || func % 8)
            return REC_READ_TORN;
    }
    return REC_READ_OK;
}

size_t rec_sampler_frames(const rec_sampler *s, zs_frame *out, int *cut)
{
    *cut = s->cut;
    s->model->frames(s, out);
    return s->n;
}

size_t rec_sampler_frame_addrs(const rec_sampler *s, uint64_t *out)
{
    if (!s->model->frame_addr)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        out[i] = s->model->frame_addr(s, i);
    return s->n;
}

uint64_t rec_sampler_outermost_frame(const rec_sampler *s)
{
    return s->model->frame_addr && s->n ? s->model->frame_addr(s, 0) : 0;
}
