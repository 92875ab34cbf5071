/* The callinfo-frame model, Zeek 8.1 on: call_stack holds {call, frame}
 * per call, and every Frame, with its function and next_stmt, lives on
 * zeek's C++ stack inside the native activation that runs it: it must be
 * copied in the window, and its address places it among native frames. */
#include <stdlib.h>

#include "rec_model.h"
#include "rec_sampler_priv.h"

typedef struct state {
    uint64_t *fields; /* per frame, the bytes [lo, lo + span) of the Frame */
    int lo;           /* offset in a Frame of the first member read */
    size_t span;
} state;

static void *state_new(const zs_layout *l, size_t max_frames)
{
    state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    int hi = l->frame_function > l->frame_next_stmt ? l->frame_function : l->frame_next_stmt;
    st->lo = l->frame_function < l->frame_next_stmt ? l->frame_function : l->frame_next_stmt;
    st->span = (size_t)(hi - st->lo) + 8;
    if (!(st->fields = malloc(max_frames * st->span))) {
        free(st);
        return NULL;
    }
    return st;
}

static void state_free(void *p)
{
    state *st = p;
    free(st->fields);
    free(st);
}

static uint64_t frame_addr(const rec_sampler *s, size_t i)
{
    return rec_field(s->callinfo + i * (size_t)s->layout->callinfo_size, s->layout->callinfo_frame);
}

static const uint8_t *fields(const rec_sampler *s, size_t i)
{
    const state *st = s->model_state;
    return (const uint8_t *)st->fields + i * st->span;
}

/* The last call: function and next_stmt of every Frame, the headers again
 * when nonblocking, and the rider (the native stack copy) last. */
static rec_read_result read_frames(rec_sampler *s)
{
    state *st = s->model_state;
    struct iovec lv[ZS_MAX_FRAMES + 3], rv[ZS_MAX_FRAMES + 3]; /* + re-read, rider */
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t frame = frame_addr(s, i);
        if (!frame || frame % 8)
            return rec_sampler_bad(s);
        lv[k] = REC_IOV((uint8_t *)st->fields + i * st->span, st->span);
        rv[k++] = REC_RIOV(frame + (uint64_t)st->lo, st->span);
    }
    k += rec_sampler_reread(s, lv + k, rv + k);
    /* The rider last, where a partial read cuts only it; and only in a
     * single call, where a short read cannot hide behind the next one. */
    size_t needed = rec_iov_total(lv, k);
    int rides = s->rider && s->rider_got < 0 && k < IOV_MAX &&
                s->rider(s->rider_ctx, frame_addr(s, 0), 0, &lv[k], &rv[k]) > 0;
    ssize_t got = rec_sampler_readv(s, lv, rv, k + (size_t)rides);
    if (got < (ssize_t)needed)
        return rec_sampler_bad(s);
    if (rides)
        s->rider_got = got - (ssize_t)needed;
    return rec_sampler_moved(s) ? REC_READ_TORN : REC_READ_OK;
}

static uint64_t frame_func(const rec_sampler *s, size_t i)
{
    const state *st = s->model_state;
    return rec_field(fields(s, i), s->layout->frame_function - st->lo);
}

/* A frame's line is its next_stmt. A body compiled by ZAM never sets it
 * (it runs instructions, not statements) but names each call it makes
 * (Frame::SetOnlyCall), which the callee's CallInfo keeps: that call
 * expression is the caller's line. */
static void frames(const rec_sampler *s, zs_frame *out)
{
    const state *st = s->model_state;
    for (size_t i = 0; i < s->n; i++) {
        out[i].func = frame_func(s, i);
        out[i].stmt = rec_field(fields(s, i), s->layout->frame_next_stmt - st->lo);
        if (!out[i].stmt && i + 1 < s->n)
            out[i].stmt = rec_field(s->callinfo + (i + 1) * (size_t)s->layout->callinfo_size,
                                    s->layout->callinfo_call);
    }
}

static int outermost_func(const zs_layout *l, zs_memory *mem, const uint8_t *ci, uint64_t *func)
{
    uint64_t frame = rec_field(ci, l->callinfo_frame);
    return !frame || zs_mem_read(mem, frame + (uint64_t)l->frame_function, func, 8) ? -1 : 0;
}

const rec_model rec_model_callinfo_frame = {
    .id = ZS_MODEL_CALLINFO_FRAME,
    .state_new = state_new,
    .state_free = state_free,
    .read_frames = read_frames,
    .frame_func = frame_func,
    .frames = frames,
    .frame_addr = frame_addr,
    .outermost_func = outermost_func,
};
