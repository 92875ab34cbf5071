/* SPDX-License-Identifier: BSD-3-Clause */
#include "bpf/rec_bpf_sample.h"

#include <stddef.h>
#include <string.h>
#include <sys/user.h>

#include "bpf/rec_bpf.h"

static int matches(const rec_bpf_event *ev, const zs_layout *l, const rec_raw_sample *r)
{
    if (ev->n > r->max_frames || ev->n > ev->depth || ev->callinfo_size != l->callinfo_size)
        return 0;
    if (l->model != ZS_MODEL_CALLINFO_FRAME)
        return 1;
    return ev->frame_span == r->frame_span && ev->frame_lo == r->frame_lo;
}

_Static_assert(REC_BPF_REGS * 8 <= sizeof(struct user_regs_struct) &&
                   offsetof(struct user_regs_struct, rsp) == 19 * 8 &&
                   offsetof(struct user_regs_struct, rip) == 16 * 8,
               "pt_regs' words are user_regs_struct's first ones");

/* The registers (the first REC_BPF_REGS words of user_regs_struct; the
 * segment bases after them are no unwinder's business) and the copy. */
static void take_native(const rec_bpf_event *ev, rec_raw_native *n)
{
    n->taken = (ev->flags & REC_BPF_F_REGS) && ev->stack_len;
    n->stack = NULL;
    n->stack_len = 0;
    if (!n->taken)
        return;
    memset(&n->regs, 0, sizeof n->regs);
    memcpy(&n->regs, ev->regs, sizeof ev->regs);
    n->stack = (uint8_t *)rec_bpf_event_stack(ev);
    n->stack_len = ev->stack_len;
}

void rec_bpf_sample_release(rec_raw_sample *r)
{
    r->native.stack = NULL;
    r->native.stack_len = 0;
    r->native.taken = 0;
}

rec_read_result rec_bpf_sample_fill(const rec_bpf_event *ev, const zs_layout *l, rec_raw_sample *r)
{
    r->pid = (pid_t)ev->pid;
    r->reads = 0;
    take_native(ev, &r->native);
    r->n = 0;
    r->cut = 0;
    r->nfs = 0;
    r->next_stmt = 0;
    memcpy(&r->cs, ev->cs, sizeof r->cs);
    memcpy(&r->fs, ev->fs, sizeof r->fs);
    /* r->network_time is not the kernel side's: the session reads it (rec_loop.c). */
    /* Registers that could not be read cost the native frames only. */
    if ((ev->status & ~(1u << REC_BPF_BAD_REGS)) || !matches(ev, l, r))
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
