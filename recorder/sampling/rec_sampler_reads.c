/* SPDX-License-Identifier: BSD-3-Clause */
/* The reads of the stop window that the window itself and each model's
 * last read share. */
#include "sampling/rec_sampler_reads.h"

#include <limits.h>

static ssize_t readv_counted(rec_sampler *s, rec_raw_sample *r, const struct iovec *l,
                             const struct iovec *rv, size_t n)
{
    r->reads++;
    return process_vm_readv(s->pid, l, n, rv, n, 0);
}

/* process_vm_readv takes at most IOV_MAX iovecs a call: a deeper 8.1+
 * stack (a frame each, plus the nonblocking re-read of the headers, which
 * stays last) takes several calls. */
ssize_t rec_sampler_readv(rec_sampler *s, rec_raw_sample *r, const struct iovec *l,
                          const struct iovec *rv, size_t n)
{
    ssize_t got = 0;
    for (size_t at = 0; at < n; at += IOV_MAX) {
        size_t k = n - at < IOV_MAX ? n - at : IOV_MAX;
        ssize_t one = readv_counted(s, r, l + at, rv + at, k);
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

int rec_sampler_moved(const rec_sampler *s, const rec_raw_sample *r)
{
    return s->nonblocking &&
           (r->cs.begin != s->cs_again.begin || r->cs.end != s->cs_again.end ||
            (s->frame_stack && (r->fs.begin != s->fs_again.begin || r->fs.end != s->fs_again.end)));
}

size_t rec_sampler_stack_iov(const rec_sampler *s, rec_raw_sample *r, uint64_t outermost_frame,
                             int early, struct iovec *local, struct iovec *remote)
{
    rec_raw_native *nat = &r->native;
    if (!s->stack || !nat->taken || s->stack_got >= 0 ||
        (early && !rec_stack_to_base(s->stack, nat->regs.rsp)))
        return 0;
    size_t len = rec_stack_copy_size(s->stack, nat->regs.rsp, outermost_frame);
    *local = REC_IOV(nat->stack, len);
    *remote = REC_RIOV(nat->regs.rsp, len);
    return len;
}
