/* SPDX-License-Identifier: BSD-3-Clause */
/* The BPF sampler's records into the session: each becomes the slot's
 * capture record (rec_bpf_sample.h) and goes into the same pending order
 * as the ptrace window's. The sampler itself, chosen and pointed at the
 * targets, is rec_bpf_sampler.c's. Built without BPF, there is nothing to
 * poll. */
#include "session/rec_session_priv.h"

#ifdef ZS_HAVE_BPF
#include "bpf/rec_bpf.h"
#include "bpf/rec_bpf_sample.h"
#include "base/rec_clock.h"

static slot *slot_of(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && s->slots[i]->active)
            return s->slots[i];
    return NULL;
}

/* A poll under way: its session, the error that stopped it, and when it
 * is to give way to the rest of the loop. */
struct feed {
    session *s;
    zs_error *err;
    uint64_t until_ns;
    int enough; /* it gave way with records left */
};

/* One record: the slot's capture record, kept for its ticks. An off-CPU
 * record stands for the ticks that passed while zeek was away, from when
 * it left the CPU (its stack then) until it came back. */
static int take_record(void *ctx, const rec_bpf_event *ev, size_t len)
{
    (void)len; /* rec_bpf_poll checked that it holds what its header says */
    struct feed *f = ctx;
    session *s = f->s;
    slot *sl = slot_of(s, (pid_t)ev->pid);
    if (ev->type == REC_BPF_DUE_NOTICE) { /* no sample: a look at it is due */
        if (sl)
            sl->due_noticed = 1;
        return 0;
    }
    if (!sl || !ev->weight)
        return 0;
    /* A full ring of pending samples (their unwinds behind): written as the
     * ptrace loop writes them, each head waiting for its unwind until 300 ms
     * after its tick. The recorder waits, zeek does not; the records wait
     * in the kernel's ring. */
    if (sl->npending == REC_PENDING_SAMPLES && rec_pending_write(s, 0, 0, f->err))
        return -1;
    int off_cpu = ev->type == REC_BPF_OFFCPU;
    uint64_t last = off_cpu ? ev->time_ns + ev->off_ns : ev->time_ns;
    tick_span ticks = {ev->time_ns, ev->weight - 1, last};
    rec_bpf_sample_fill(ev, &sl->target.layout, &sl->raw);
    /* The copy lives in the ring until this returns: to the unwinder now. */
    int with_stack = sl->native && sl->raw.native.taken;
    rec_pending_keep(s, sl, with_stack, ticks, off_cpu);
    if (with_stack)
        rec_pending_submit(s, sl);
    rec_bpf_sample_release(&sl->raw);
    /* Records keep coming while these are written: a poll that took them
     * all might never end while a stalled unwinder makes each one wait,
     * and nothing would reach the file. */
    f->enough = rec_now_ns() >= f->until_ns;
    return f->enough ? REC_BPF_ENOUGH : 0;
}

/* Once the unwinds know where a target's stack begins, the kernel's copies
 * end there (as the ptrace sampler's do). */
static void follow_stack_bases(session *s)
{
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (!sl->active || !sl->native)
            continue;
        rec_stack_plan plan;
        rec_native_stack_plan(sl->native, &plan);
        rec_bpf_set_stack_base(s->o->bpf, sl->target.pid, plan.base);
    }
}

int rec_bpf_feed_poll(session *s, uint64_t budget_ns, zs_error *err)
{
    struct feed f = {s, err, rec_now_ns() + budget_ns, 0};
    err->code = ZS_OK;
    if (rec_bpf_poll(s->o->bpf, take_record, &f) < 0) {
        if (err->code != ZS_OK) /* a write failed: the recording stops */
            return -1;
        s->bpf_poll_errors++;
    }
    follow_stack_bases(s);
    return f.enough;
}

#else

int rec_bpf_feed_poll(session *s, uint64_t budget_ns, zs_error *err)
{
    (void)s;
    (void)budget_ns;
    (void)err;
    return 0;
}

#endif
