#include "bpf/rec_bpf_sample.h"

#include <string.h>

#include "bpf/rec_bpf.h"

/* The reads whose failure leaves the frames unknown (network_time's does not). */
static const unsigned FRAMES_BAD = ~(1u << REC_BPF_BAD_NETWORK_TIME);

static int matches(const rec_bpf_event *ev, const zs_layout *l, const rec_raw_sample *r)
{
    if (ev->n > r->max_frames || ev->n > ev->depth || ev->callinfo_size != l->callinfo_size)
        return 0;
    if (l->model != ZS_MODEL_CALLINFO_FRAME)
        return 1;
    return ev->frame_span == r->frame_span && ev->frame_lo == r->frame_lo;
}

rec_read_result rec_bpf_sample_fill(const rec_bpf_event *ev, const zs_layout *l, rec_raw_sample *r)
{
    r->pid = (pid_t)ev->pid;
    r->reads = 0;
    r->native.taken = 0;
    r->n = 0;
    r->cut = 0;
    r->nfs = 0;
    r->next_stmt = 0;
    memcpy(&r->cs, ev->cs, sizeof r->cs);
    memcpy(&r->fs, ev->fs, sizeof r->fs);
    memcpy(&r->network_time, &ev->network_time, sizeof r->network_time);
    if ((ev->status & FRAMES_BAD) || !matches(ev, l, r))
        return r->result = REC_READ_FAILED;
    r->n = ev->n;
    r->cut = (ev->flags & REC_BPF_F_CUT) != 0;
    r->next_stmt = ev->next_stmt;
    for (uint32_t i = 0; i < ev->n; i++) {
        memcpy(r->callinfo + i * (size_t)l->callinfo_size, rec_bpf_event_callinfo(ev, i),
               (size_t)l->callinfo_size);
        if (l->model == ZS_MODEL_CALLINFO_FRAME)
            memcpy(r->frame_fields + i * r->frame_span, rec_bpf_event_frame(ev, i), r->frame_span);
    }
    return r->result = REC_READ_OK;
}
