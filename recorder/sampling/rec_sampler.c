/* SPDX-License-Identifier: BSD-3-Clause */
#include "sampling/rec_sampler.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampling/rec_ptrace.h"
#include "sampling/rec_sampler_frames.h"
#include "sampling/rec_sampler_reads.h"

/* Arrays read speculatively in the first call, at the address and size the
 * previous sample found: vectors rarely move, so usually that saves a call. */
enum { SPECULATE_MAX = 128 };

rec_sampler *rec_sampler_new(const rec_target *t, int nonblocking)
{
    rec_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->pid = t->pid;
    s->layout = &t->layout;
    s->model = rec_model_of(t->layout.model);
    s->call_stack = t->call_stack;
    s->frame_stack = t->frame_stack;
    s->network_time_addr = t->network_time;
    s->nonblocking = nonblocking;
    if (!s->model) {
        free(s);
        return NULL;
    }
    return s;
}

void rec_sampler_free(rec_sampler *s) { free(s); }

/* Entries of a vector of elem-byte elements, or -1 when it is not one. */
static int64_t entries(const rec_raw_vec *v, uint64_t elem)
{
    if (v->end < v->begin || (v->end - v->begin) % elem)
        return -1;
    return (int64_t)((v->end - v->begin) / elem);
}

static size_t speculate(const rec_raw_vec *v, uint64_t elem, size_t max)
{
    uint64_t cap = v->cap > v->begin ? (v->cap - v->begin) / elem : 0;
    if (cap > max)
        cap = max;
    return cap > SPECULATE_MAX ? SPECULATE_MAX : (size_t)cap;
}

/* Call 1: the vector headers, and speculatively their arrays. Returns the
 * iovec count; *headers is how many of them are the headers, *spec_ci and
 * *spec_fs the index of each speculative array (0: none). */
static size_t first_call(rec_sampler *s, rec_raw_sample *r, struct iovec *local,
                         struct iovec *remote, size_t *headers, size_t *spec_ci, size_t *spec_fs)
{
    const zs_layout *l = s->layout;
    const int second = s->frame_stack != 0;
    size_t k = 0;
    local[k] = REC_IOV(&r->cs, sizeof r->cs);
    remote[k++] = REC_RIOV(s->call_stack + (uint64_t)l->vector_begin, sizeof r->cs);
    if (second) {
        local[k] = REC_IOV(&r->fs, sizeof r->fs);
        remote[k++] = REC_RIOV(s->frame_stack + (uint64_t)l->vector_begin, sizeof r->fs);
    }
    if (s->network_time_addr) {
        local[k] = REC_IOV(&r->network_time, 8);
        remote[k++] = REC_RIOV(s->network_time_addr, 8);
    }
    *headers = k;
    *spec_ci = *spec_fs = 0;
    if (s->spec_cs_n) {
        *spec_ci = k;
        local[k] = REC_IOV(r->callinfo, s->spec_cs_n * (size_t)l->callinfo_size);
        remote[k++] = REC_RIOV(s->spec_cs_begin, s->spec_cs_n * (size_t)l->callinfo_size);
    }
    if (second && s->spec_fs_n) {
        *spec_fs = k;
        local[k] = REC_IOV(r->frame_ptrs, s->spec_fs_n * 8);
        remote[k++] = REC_RIOV(s->spec_fs_begin, s->spec_fs_n * 8);
    }
    return k;
}

void rec_sampler_warm(rec_sampler *s, rec_raw_sample *r)
{
    struct iovec local[5], remote[5];
    size_t headers, spec_ci, spec_fs;
    size_t k = first_call(s, r, local, remote, &headers, &spec_ci, &spec_fs);
    process_vm_readv(s->pid, local, k, remote, k, 0);
}

/* Calls 1 and 2, the same for every model: the vector headers (and
 * network_time), the CallInfo array and, where the model has a second
 * vector (g_frame_stack), its top element. */
static rec_read_result read_arrays(rec_sampler *s, rec_raw_sample *r)
{
    const zs_layout *l = s->layout;
    const size_t ci_size = (size_t)l->callinfo_size;
    const int second = s->frame_stack != 0;
    const rec_read_result bad = rec_sampler_bad(s);
    struct iovec local[6], remote[6]; /* first_call's, and the stack copy last */
    size_t headers, spec_ci, spec_fs;
    size_t k = first_call(s, r, local, remote, &headers, &spec_ci, &spec_fs);
    /* Last, where a partial read (a speculative array gone) cuts only it. */
    size_t needed = rec_iov_total(local, k);
    int rides = rec_sampler_stack_iov(s, r, 0, 1, &local[k], &remote[k]) > 0;
    /* Six iovecs at most: one call. */
    ssize_t got = rec_sampler_readv(s, r, local, remote, k + (size_t)rides);
    if (got < (ssize_t)rec_iov_total(local, headers))
        return REC_READ_FAILED;
    if (rides && got >= (ssize_t)needed)
        s->stack_got = got - (ssize_t)needed;
    int64_t n = entries(&r->cs, ci_size), nfs = second ? entries(&r->fs, 8) : 0;
    if (n < 0 || nfs < 0)
        return bad;
    r->cut = (size_t)n > r->max_frames;
    /* Keep the outermost frames: they name the event being handled. */
    r->n = r->cut ? r->max_frames : (size_t)n;
    if ((size_t)nfs > r->max_frames)
        nfs = (int64_t)r->max_frames;
    r->nfs = nfs;
    int ci_ok = spec_ci && got >= (ssize_t)rec_iov_total(local, spec_ci + 1) &&
                r->cs.begin == s->spec_cs_begin && r->n <= s->spec_cs_n;
    int fs_ok = !second || (spec_fs && got >= (ssize_t)rec_iov_total(local, spec_fs + 1) &&
                               r->fs.begin == s->spec_fs_begin && (size_t)nfs <= s->spec_fs_n);
    s->spec_cs_begin = r->cs.begin;
    s->spec_cs_n = speculate(&r->cs, ci_size, r->max_frames);
    s->spec_fs_begin = r->fs.begin;
    s->spec_fs_n = second ? speculate(&r->fs, 8, r->max_frames) : 0;
    if (r->n == 0 || (ci_ok && (fs_ok || nfs == 0)))
        return REC_READ_OK;

    /* Call 2, only when the vectors moved or grew: the arrays exactly. */
    k = 0;
    local[k] = REC_IOV(r->callinfo, r->n * ci_size);
    remote[k++] = REC_RIOV(r->cs.begin, r->n * ci_size);
    if (second && nfs > 0) {
        local[k] = REC_IOV(&r->frame_ptrs[nfs - 1], 8);
        remote[k++] = REC_RIOV(r->fs.end - 8, 8);
    }
    return rec_sampler_readv(s, r, local, remote, k) == (ssize_t)rec_iov_total(local, k)
               ? REC_READ_OK
               : bad;
}

static rec_read_result read_script(rec_sampler *s, rec_raw_sample *r)
{
    rec_read_result res = read_arrays(s, r);
    if (res != REC_READ_OK || r->n == 0)
        return res;
    res = s->layout->model == ZS_MODEL_CALLINFO_FRAME ? rec_sampler_read_callinfo_frames(s, r)
                                                      : rec_sampler_read_frame_stack(s, r);
    if (res != REC_READ_OK)
        return res;
    /* Nonblocking: a Func pointer caught mid-update is not a frame. */
    for (size_t i = 0; s->nonblocking && i < r->n; i++) {
        uint64_t func = s->model->frame_func(s->layout, r, i);
        if (!func || func % 8)
            return REC_READ_TORN;
    }
    return REC_READ_OK;
}

/* The stack copy, when it did not ride on a script read (no script frame
 * to read, or the model's last read in several calls): a read of its own. */
static void copy_stack(rec_sampler *s, rec_raw_sample *r)
{
    ssize_t got = s->stack_got;
    if (got < 0) {
        struct iovec local, remote;
        rec_sampler_stack_iov(s, r, rec_model_outermost_frame(s->layout, r), 0, &local, &remote);
        got = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
    }
    /* Near the top of the stack the copy is shorter: a partial read. */
    r->native.stack_len = got > 0 ? (size_t)got : 0;
}

rec_read_result rec_sampler_take(rec_sampler *s, rec_raw_sample *r, const rec_stack_plan *stack)
{
    r->pid = s->pid;
    r->reads = 0;
    r->n = 0;
    r->cut = 0;
    r->nfs = 0;
    r->next_stmt = 0;
    /* Not asked for, r->native is left as it is (a copy not yet handed on). */
    s->stack = !s->nonblocking && r->native.stack ? stack : NULL;
    s->stack_got = -1;
    if (s->stack) {
        /* The registers first, so that the stack copy can ride on the
         * script frames' reads. */
        r->native.stack_len = 0;
        r->native.taken = rec_ptrace_regs(s->pid, &r->native.regs) == 0;
    }
    r->result = read_script(s, r);
    if (s->stack && r->native.taken && r->result == REC_READ_OK)
        copy_stack(s, r);
    else if (s->stack)
        r->native.taken = 0;
    s->stack = NULL;
    return r->result;
}
