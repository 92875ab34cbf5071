/* SPDX-License-Identifier: BSD-3-Clause */
/* The frame-stack model, Zeek 3.0-8.0: call_stack holds {call, func} per
 * call and g_frame_stack the Frames on the heap; the innermost Frame's
 * next_stmt is the innermost line, each outer frame executes the call site
 * of the CallInfo after it. */
#include "frames/rec_model.h"

static const uint8_t *callinfo(const zs_layout *l, const rec_raw_sample *r, size_t i)
{
    return r->callinfo + i * (size_t)l->callinfo_size;
}

static uint64_t frame_func(const zs_layout *l, const rec_raw_sample *r, size_t i)
{
    return rec_field(callinfo(l, r, i), l->callinfo_func);
}

static void frames(const zs_layout *l, const rec_raw_sample *r, zs_frame *out)
{
    for (size_t i = 0; i < r->n; i++) {
        out[i].func = frame_func(l, r, i);
        out[i].stmt = i + 1 < r->n ? rec_field(callinfo(l, r, i + 1), l->callinfo_call)
                                   : r->next_stmt;
    }
    if (r->cut && r->n)
        out[r->n - 1].stmt = 0; /* the real innermost frame was cut off */
}

static int outermost_func(const zs_layout *l, zs_memory *mem, const uint8_t *ci, uint64_t *func)
{
    (void)mem;
    *func = rec_field(ci, l->callinfo_func);
    return 0;
}

const rec_model rec_model_frame_stack = {
    .id = ZS_MODEL_FRAME_STACK,
    .frame_func = frame_func,
    .frames = frames,
    .frame_addr = NULL,
    .outermost_func = outermost_func,
};
