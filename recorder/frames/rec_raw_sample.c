/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames/rec_raw_sample.h"

#include <stdlib.h>


size_t rec_raw_frame_span(int32_t function, int32_t next_stmt, int32_t *lo)
{
    int32_t hi = function > next_stmt ? function : next_stmt;
    *lo = function < next_stmt ? function : next_stmt;
    return (size_t)(hi - *lo) + 8;
}

int rec_raw_sample_init(rec_raw_sample *r, const zs_layout *l, size_t max_frames, int with_stack)
{
    *r = (rec_raw_sample){.max_frames = max_frames};
    r->frame_span = rec_raw_frame_span(l->frame_function, l->frame_next_stmt, &r->frame_lo);
    r->callinfo = malloc(max_frames * (size_t)l->callinfo_size);
    r->frame_ptrs = malloc(max_frames * sizeof *r->frame_ptrs);
    r->frame_fields = malloc(max_frames * r->frame_span);
    if (with_stack)
        r->native.stack = malloc(REC_NATIVE_STACK_MAX);
    if (!r->callinfo || !r->frame_ptrs || !r->frame_fields || (with_stack && !r->native.stack)) {
        rec_raw_sample_free(r);
        return -1;
    }
    return 0;
}

void rec_raw_sample_free(rec_raw_sample *r)
{
    free(r->callinfo);
    free(r->frame_ptrs);
    free(r->frame_fields);
    free(r->native.stack);
    *r = (rec_raw_sample){0};
}

int rec_stack_to_base(const rec_stack_plan *p, uint64_t rsp)
{
    return p->base > rsp && p->base - rsp <= REC_NATIVE_STACK_MAX - REC_NATIVE_STACK_PAGE;
}

/* Once an unwind has reached the thread's entry (_start) without running
 * out of copy, the stack's base is known: the main thread's outermost
 * frame never moves, so the copy ends there, at the end of its page (the
 * pages touched are what a copy costs), up to REC_NATIVE_STACK_MAX: whole
 * stacks however deep (a real zeek's packet analysis passed 16 KiB in 3 %
 * of its samples), no more than they hold. Before that, from 8.1 on, the
 * outermost script frame's Frame lies in the activation that runs it: the
 * stack above it holds only the event loop's few frames up to _start, so
 * the copy ends REC_NATIVE_STACK_SLACK above that Frame, within
 * [REC_NATIVE_STACK_MIN, REC_NATIVE_STACK_BYTES]. Without either (older
 * models, no script running), or when the last unwind needed more stack
 * than it was given, REC_NATIVE_STACK_BYTES. */
size_t rec_stack_copy_size(const rec_stack_plan *p, uint64_t rsp, uint64_t outermost_frame)
{
    const uint64_t page = REC_NATIVE_STACK_PAGE;
    if (rec_stack_to_base(p, rsp))
        return (size_t)(((p->base + page - 1) & ~(page - 1)) - rsp);
    if (!outermost_frame || p->last_beyond || outermost_frame < rsp ||
        outermost_frame - rsp >= REC_NATIVE_STACK_BYTES)
        return REC_NATIVE_STACK_BYTES;
    uint64_t end = (outermost_frame + REC_NATIVE_STACK_SLACK + page - 1) & ~(page - 1);
    uint64_t len = end - rsp;
    if (len < REC_NATIVE_STACK_MIN)
        return REC_NATIVE_STACK_MIN;
    return len > REC_NATIVE_STACK_BYTES ? REC_NATIVE_STACK_BYTES : (size_t)len;
}
