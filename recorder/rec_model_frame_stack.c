/* The frame-stack model, Zeek 3.0-8.0: call_stack holds {call, func} per
 * call and g_frame_stack the Frames on the heap; the innermost Frame's
 * next_stmt is the innermost line, each outer frame executes the call site
 * of the CallInfo after it. */
#include <stdlib.h>

#include "rec_model.h"
#include "rec_sampler_priv.h"

typedef struct state {
    uint64_t next_stmt; /* the innermost Frame's */
} state;

static void *state_new(const zs_layout *l, size_t max_frames)
{
    (void)l;
    (void)max_frames;
    return calloc(1, sizeof(state));
}

/* The last call: the innermost Frame's next_stmt, and the headers again
 * when nonblocking, to catch a stack that moved meanwhile. */
static rec_read_result read_frames(rec_sampler *s)
{
    state *st = s->model_state;
    struct iovec local[3], remote[3];
    uint64_t top = s->nfs > 0 ? s->frame_ptrs[s->nfs - 1] : 0;
    size_t k = 0;
    st->next_stmt = 0;
    if (top) {
        local[k] = REC_IOV(&st->next_stmt, 8);
        remote[k++] = REC_RIOV(top + (uint64_t)s->layout->frame_next_stmt, 8);
    }
    k += rec_sampler_reread(s, local + k, remote + k);
    if (k && rec_sampler_readv(s, local, remote, k) != (ssize_t)rec_iov_total(local, k))
        return rec_sampler_bad(s);
    return rec_sampler_moved(s) ? REC_READ_TORN : REC_READ_OK;
}

static const uint8_t *callinfo(const rec_sampler *s, size_t i)
{
    return s->callinfo + i * (size_t)s->layout->callinfo_size;
}

static uint64_t frame_func(const rec_sampler *s, size_t i)
{
    return rec_field(callinfo(s, i), s->layout->callinfo_func);
}

static void frames(const rec_sampler *s, zs_frame *out)
{
    const state *st = s->model_state;
    for (size_t i = 0; i < s->n; i++) {
        out[i].func = frame_func(s, i);
        out[i].stmt = i + 1 < s->n ? rec_field(callinfo(s, i + 1), s->layout->callinfo_call)
                                   : st->next_stmt;
    }
    if (s->cut && s->n)
        out[s->n - 1].stmt = 0; /* the real innermost frame was cut off */
}

static int outermost_func(const zs_layout *l, zs_memory *mem, const uint8_t *ci, uint64_t *func)
{
    (void)mem;
    *func = rec_field(ci, l->callinfo_func);
    return 0;
}

const rec_model rec_model_frame_stack = {
    .id = ZS_MODEL_FRAME_STACK,
    .state_new = state_new,
    .state_free = free,
    .read_frames = read_frames,
    .frame_func = frame_func,
    .frames = frames,
    .frame_addr = NULL,
    .outermost_func = outermost_func,
};
