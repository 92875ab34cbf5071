#include "rec_sampler.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "rec_memory.h"

struct rec_sampler {
    pid_t pid;
    const zs_layout *layout;
    uint64_t call_stack, frame_stack;
    size_t max_frames;
    int nonblocking;

    /* Copied in the window. */
    uint64_t cs[2], fs[2];     /* vector begin/end */
    uint64_t cs_again[2], fs_again[2];
    uint8_t *callinfo;         /* max_frames * callinfo_size */
    uint64_t top_frame;        /* frame-stack model: innermost Frame* */
    uint64_t next_stmt;        /* frame-stack model: its next_stmt */
    uint64_t *frame_fields;    /* callinfo-frame model: per frame [function .. next_stmt] */
    int frame_lo;              /* offset of the first of those fields in a Frame */
    size_t frame_span;         /* bytes read per frame in that model */
    size_t n;                  /* CallInfo entries copied */
    int cut;
};

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
    s->max_frames = max_frames;
    s->nonblocking = nonblocking;
    int hi = l->frame_function > l->frame_next_stmt ? l->frame_function : l->frame_next_stmt;
    s->frame_lo = l->frame_function < l->frame_next_stmt ? l->frame_function : l->frame_next_stmt;
    s->frame_span = (size_t)(hi - s->frame_lo) + 8;
    s->callinfo = malloc(max_frames * (size_t)l->callinfo_size);
    s->frame_fields = malloc(max_frames * s->frame_span);
    if (!s->callinfo || !s->frame_fields) {
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
    free(s->frame_fields);
    free(s);
}

static uint64_t field(const uint8_t *p, int off)
{
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}

#define IOV(ptr, len) ((struct iovec){(void *)(ptr), (len)})
#define RIOV(addr, len) ((struct iovec){(void *)(uintptr_t)(addr), (len)})

static int vector_count(const rec_sampler *s, size_t *n, int *cut)
{
    uint64_t size = (uint64_t)s->layout->callinfo_size;
    if (s->cs[1] < s->cs[0] || (s->cs[1] - s->cs[0]) % size)
        return -1;
    uint64_t count = (s->cs[1] - s->cs[0]) / size;
    *cut = count > s->max_frames;
    /* Keep the outermost frames: they name the event being handled. */
    *n = *cut ? s->max_frames : (size_t)count;
    return 0;
}

rec_read_result rec_sampler_read(rec_sampler *s)
{
    const zs_layout *l = s->layout;
    struct iovec local[3], remote[3];
    int old_model = l->model == ZS_MODEL_FRAME_STACK;

    /* Call 1: the vector headers. */
    local[0] = IOV(s->cs, 16);
    remote[0] = RIOV(s->call_stack + (uint64_t)l->vector_begin, 16);
    local[1] = IOV(s->fs, 16);
    remote[1] = RIOV(s->frame_stack + (uint64_t)l->vector_begin, 16);
    if (rec_readv(s->pid, local, remote, old_model ? 2 : 1))
        return REC_READ_FAILED;
    s->n = 0;
    if (vector_count(s, &s->n, &s->cut))
        return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
    if (s->n == 0)
        return REC_READ_OK;

    /* Call 2: the CallInfo array, and the innermost Frame pointer. */
    size_t k = 0;
    local[k] = IOV(s->callinfo, s->n * (size_t)l->callinfo_size);
    remote[k++] = RIOV(s->cs[0], s->n * (size_t)l->callinfo_size);
    int have_frame = old_model && s->fs[1] > s->fs[0];
    if (have_frame) {
        local[k] = IOV(&s->top_frame, 8);
        remote[k++] = RIOV(s->fs[1] - 8, 8);
    }
    if (rec_readv(s->pid, local, remote, k))
        return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;

    /* Call 3: what the frames are executing; nonblocking re-reads the
     * headers in the same call to detect a stack that moved meanwhile. */
    k = 0;
    if (old_model) {
        s->next_stmt = 0;
        if (have_frame && s->top_frame) {
            local[k] = IOV(&s->next_stmt, 8);
            remote[k++] = RIOV(s->top_frame + (uint64_t)l->frame_next_stmt, 8);
        }
        if (s->nonblocking) {
            local[k] = IOV(s->cs_again, 16);
            remote[k++] = RIOV(s->call_stack + (uint64_t)l->vector_begin, 16);
            local[k] = IOV(s->fs_again, 16);
            remote[k++] = RIOV(s->frame_stack + (uint64_t)l->vector_begin, 16);
        }
        if (k && rec_readv(s->pid, local, remote, k))
            return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
        if (s->nonblocking && (memcmp(s->cs, s->cs_again, 16) || memcmp(s->fs, s->fs_again, 16)))
            return REC_READ_TORN;
    } else {
        struct iovec lv[ZS_MAX_FRAMES + 1], rv[ZS_MAX_FRAMES + 1];
        for (size_t i = 0; i < s->n; i++) {
            uint64_t frame = field(s->callinfo + i * (size_t)l->callinfo_size, l->callinfo_frame);
            if (!frame || frame % 8)
                return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
            lv[k] = IOV((uint8_t *)s->frame_fields + i * s->frame_span, s->frame_span);
            rv[k++] = RIOV(frame + (uint64_t)s->frame_lo, s->frame_span);
        }
        if (s->nonblocking) {
            lv[k] = IOV(s->cs_again, 16);
            rv[k++] = RIOV(s->call_stack + (uint64_t)l->vector_begin, 16);
        }
        if (rec_readv(s->pid, lv, rv, k))
            return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
        if (s->nonblocking && memcmp(s->cs, s->cs_again, 16))
            return REC_READ_TORN;
    }
    /* Nonblocking: a Func pointer caught mid-update is not a frame. */
    for (size_t i = 0; s->nonblocking && i < s->n; i++) {
        uint64_t func = old_model
            ? field(s->callinfo + i * (size_t)l->callinfo_size, l->callinfo_func)
            : field((const uint8_t *)s->frame_fields + i * s->frame_span,
                    l->frame_function - s->frame_lo);
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
