/* SPDX-License-Identifier: BSD-3-Clause */
/* The callinfo-frame model, Zeek 8.1 on: call_stack holds {call, frame}
 * per call, and every Frame, with its function and next_stmt, lives on
 * zeek's C++ stack inside the native activation that runs it: a sampler
 * copies those members of each Frame with the stack (rec_raw_sample's
 * frame_fields), and a Frame's address places it among native frames. */
#include "frames/rec_model.h"

static uint64_t frame_addr(const zs_layout *l, const rec_raw_sample *r, size_t i)
{
    return rec_field(r->callinfo + i * (size_t)l->callinfo_size, l->callinfo_frame);
}

static const uint8_t *fields(const rec_raw_sample *r, size_t i)
{
    return r->frame_fields + i * r->frame_span;
}

static uint64_t frame_func(const zs_layout *l, const rec_raw_sample *r, size_t i)
{
    return rec_field(fields(r, i), l->frame_function - r->frame_lo);
}

/* A frame's line is its next_stmt. A body compiled by ZAM never sets it
 * (it runs instructions, not statements) but names each call it makes
 * (Frame::SetOnlyCall), which the callee's CallInfo keeps: that call
 * expression is the caller's line. */
static void frames(const zs_layout *l, const rec_raw_sample *r, zs_frame *out)
{
    for (size_t i = 0; i < r->n; i++) {
        out[i].func = frame_func(l, r, i);
        out[i].stmt = rec_field(fields(r, i), l->frame_next_stmt - r->frame_lo);
        if (!out[i].stmt && i + 1 < r->n)
            out[i].stmt = rec_field(r->callinfo + (i + 1) * (size_t)l->callinfo_size,
                                    l->callinfo_call);
    }
}

static int outermost_func(const zs_layout *l, zs_memory *mem, const uint8_t *ci, uint64_t *func)
{
    uint64_t frame = rec_field(ci, l->callinfo_frame);
    return !frame || zs_mem_read(mem, frame + (uint64_t)l->frame_function, func, 8) ? -1 : 0;
}

const rec_model rec_model_callinfo_frame = {
    .id = ZS_MODEL_CALLINFO_FRAME,
    .frame_func = frame_func,
    .frames = frames,
    .frame_addr = frame_addr,
    .outermost_func = outermost_func,
};
