/* SPDX-License-Identifier: BSD-3-Clause */
/* The ptrace sampler's last read of the window, by model: what each frame
 * is executing (rec_model.h decodes it). */
#include "sampling/rec_sampler_frames.h"

#include <limits.h>

/* Frame-stack model (3.0-8.0): the innermost Frame's next_stmt, and the
 * headers again when nonblocking, to catch a stack that moved meanwhile. */
rec_read_result rec_sampler_read_frame_stack(rec_sampler *s, rec_raw_sample *r)
{
    struct iovec local[3], remote[3];
    uint64_t top = r->nfs > 0 ? r->frame_ptrs[r->nfs - 1] : 0;
    size_t k = 0;
    r->next_stmt = 0;
    if (top) {
        local[k] = REC_IOV(&r->next_stmt, 8);
        remote[k++] = REC_RIOV(top + (uint64_t)s->layout->frame_next_stmt, 8);
    }
    k += rec_sampler_reread(s, local + k, remote + k);
    if (k && rec_sampler_readv(s, r, local, remote, k) != (ssize_t)rec_iov_total(local, k))
        return rec_sampler_bad(s);
    return rec_sampler_moved(s, r) ? REC_READ_TORN : REC_READ_OK;
}

/* Callinfo-frame model (8.1+): function and next_stmt of every Frame, the
 * headers again when nonblocking, and the stack copy last. */
rec_read_result rec_sampler_read_callinfo_frames(rec_sampler *s, rec_raw_sample *r)
{
    struct iovec lv[ZS_MAX_FRAMES + 3], rv[ZS_MAX_FRAMES + 3]; /* + re-read, stack */
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        uint64_t frame = rec_model_callinfo_frame.frame_addr(s->layout, r, i);
        if (!frame || frame % 8)
            return rec_sampler_bad(s);
        lv[k] = REC_IOV(r->frame_fields + i * r->frame_span, r->frame_span);
        rv[k++] = REC_RIOV(frame + (uint64_t)r->frame_lo, r->frame_span);
    }
    k += rec_sampler_reread(s, lv + k, rv + k);
    /* The stack last, where a partial read cuts only it; and only in a
     * single call, where a short read cannot hide behind the next one. */
    size_t needed = rec_iov_total(lv, k);
    int rides = k < IOV_MAX &&
                rec_sampler_stack_iov(s, r, rec_model_outermost_frame(s->layout, r), 0, &lv[k],
                                      &rv[k]) > 0;
    ssize_t got = rec_sampler_readv(s, r, lv, rv, k + (size_t)rides);
    if (got < (ssize_t)needed)
        return rec_sampler_bad(s);
    if (rides)
        s->stack_got = got - (ssize_t)needed;
    return rec_sampler_moved(s, r) ? REC_READ_TORN : REC_READ_OK;
}
