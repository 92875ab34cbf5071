/* SPDX-License-Identifier: BSD-3-Clause */
/* The session's side of the BPF sampler: choosing it, pointing it at each
 * target's main thread, and feeding its records into the same pending
 * order as the ptrace window's (each record becomes the slot's capture
 * record, rec_bpf_sample.h). Built without BPF, every call says so. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rec_clock.h"
#include "session/rec_session_priv.h"

#ifdef ZS_HAVE_BPF
#include "bpf/rec_bpf.h"
#include "bpf/rec_bpf_sample.h"

#define BPF_SELF_TIMING_ENV "ZEEK_SPY_BPF_SELF_TIMING"
#define BPF_LEGACY_ENV "ZEEK_SPY_BPF_LEGACY"

int rec_sampler_choose(rec_options *o, char *note, size_t note_len, zs_error *err)
{
    note[0] = '\0';
    o->bpf = NULL;
    if (o->sampler == REC_SAMPLER_PTRACE)
        return 0;
    zs_error why = {0};
    /* A lab knob for the benchmark: the kernel side times its parts (ticks,
     * a target's leaves and returns), shown by -v. Not an option: it adds
     * clock reads to every run. */
    unsigned flags = getenv(BPF_SELF_TIMING_ENV) ? REC_BPF_SELF_TIMING : 0;
    /* For the tests: the kernel side as it runs before 5.15, on this kernel. */
    if (getenv(BPF_LEGACY_ENV))
        flags |= REC_BPF_LEGACY;
    if (o->cpu_only)
        flags |= REC_BPF_NO_OFFCPU;
    rec_bpf_set_verbose(o->verbose);
    o->bpf = rec_bpf_open((unsigned)(o->rate_hz + 0.5), flags, &why);
    if (o->bpf) {
        o->sampler = REC_SAMPLER_BPF;
        return 0;
    }
    if (o->sampler == REC_SAMPLER_BPF)
        return zs_fail(err, why.code, "%s: %s", o->cpu_only ? "--cpu-only" : "--sampler bpf",
                       why.detail);
    o->sampler = REC_SAMPLER_PTRACE;
    snprintf(note, note_len, "sampling with ptrace: the BPF sampler cannot run here: %s",
             why.detail);
    return 0;
}

void rec_sampler_release(rec_options *o)
{
    rec_bpf_close(o->bpf);
    o->bpf = NULL;
}

int rec_bpf_feed_add(session *s, slot *sl, zs_error *err)
{
    rec_bpf_params p;
    if (rec_bpf_params_of(&sl->target, ZS_MAX_FRAMES, &p, err))
        return -1;
    p.stack_bytes = rec_slot_wants_stack(s, sl) ? REC_NATIVE_STACK_BYTES : 0;
    /* Zeek runs its scripts on its main thread, whose tid is its pid. */
    return rec_bpf_add_target(s->o->bpf, sl->target.pid, sl->target.pid, &p, err);
}

void rec_bpf_feed_remove(session *s, slot *sl)
{
    if (s->o->bpf)
        rec_bpf_remove_target(s->o->bpf, sl->target.pid);
}

static slot *slot_of(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && s->slots[i]->active)
            return s->slots[i];
    return NULL;
}

/* A poll under way: its session, and the error that stopped it. */
struct feed {
    session *s;
    zs_error *err;
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
    return 0;
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

int rec_bpf_feed_poll(session *s, zs_error *err)
{
    struct feed f = {s, err};
    err->code = ZS_OK;
    if (rec_bpf_poll(s->o->bpf, take_record, &f) < 0) {
        if (err->code != ZS_OK) /* a write failed: the recording stops */
            return -1;
        s->bpf_poll_errors++;
    }
    follow_stack_bases(s);
    return 0;
}

int rec_bpf_feed_describe(const session *s, int detail, char *buf, size_t len)
{
    uint64_t c[REC_BPF_C__COUNT];
    if (rec_bpf_counters(s->o->bpf, c))
        return -1;
    uint64_t failed = 0;
    for (unsigned k = 0; k < REC_BPF_BAD__COUNT; k++)
        failed += c[REC_BPF_C_BAD + k];
    if (!detail) {
        char off[96] = " (on-CPU only: --cpu-only)";
        if (!s->o->cpu_only)
            snprintf(off, sizeof off, ", %" PRIu64 " off-CPU samples standing for %" PRIu64 " ticks",
                     c[REC_BPF_C_OFFCPU], c[REC_BPF_C_OFFCPU_WEIGHT]);
        snprintf(buf, len, "sampler: bpf: %" PRIu64 " on-CPU ticks%s; %" PRIu64 " reads failed (a "
                 "page not in memory: counted, not guessed), %" PRIu64 " records lost to a full "
                 "ring%s", c[REC_BPF_C_TICKS], off, failed, c[REC_BPF_C_RING_FULL],
                 s->bpf_poll_errors ? "; the ring buffer could not be read at times" : "");
        return failed || c[REC_BPF_C_RING_FULL] || s->bpf_poll_errors;
    }
    size_t at = (size_t)snprintf(buf, len, "sampler: bpf (%s): ", rec_bpf_variant(s->o->bpf));
    if (!s->o->cpu_only && at < len)
        at += (size_t)snprintf(buf + at, len - at, "%" PRIu64 " switches of a target off its CPU; ",
                               c[REC_BPF_C_LEAVES]);
    if (at < len)
        at += (size_t)snprintf(buf + at, len - at, "failed reads by kind:");
    for (unsigned k = 0; k < REC_BPF_BAD__COUNT && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, " %s %" PRIu64,
                               rec_bpf_counter_name(REC_BPF_C_BAD + k), c[REC_BPF_C_BAD + k]);
    if (c[REC_BPF_C_TICK_NS] && at < len)
        snprintf(buf + at, len - at, "; self-timed: ticks %" PRIu64 " ns, leaves %" PRIu64
                 " ns, returns %" PRIu64 " ns (%" PRIu64 " of them too short for a tick)",
                 c[REC_BPF_C_TICK_NS], c[REC_BPF_C_LEAVE_NS], c[REC_BPF_C_RETURN_NS],
                 c[REC_BPF_C_OFFCPU_SHORT]);
    return 0;
}

#else

int rec_sampler_choose(rec_options *o, char *note, size_t note_len, zs_error *err)
{
    note[0] = '\0';
    o->bpf = NULL;
    if (o->sampler == REC_SAMPLER_BPF)
        return zs_fail(err, ZS_E_NO_BPF, "--sampler bpf: this recorder was built without the BPF "
                       "sampler (clang, bpftool and libbpf-dev at build time)");
    if (o->sampler == REC_SAMPLER_AUTO)
        snprintf(note, note_len, "sampling with ptrace: this recorder was built without the BPF "
                 "sampler");
    o->sampler = REC_SAMPLER_PTRACE;
    return 0;
}

void rec_sampler_release(rec_options *o) { (void)o; }

int rec_bpf_feed_add(session *s, slot *sl, zs_error *err)
{
    (void)s;
    (void)sl;
    return zs_fail(err, ZS_E_NO_BPF, "built without the BPF sampler");
}

void rec_bpf_feed_remove(session *s, slot *sl)
{
    (void)s;
    (void)sl;
}

int rec_bpf_feed_poll(session *s, zs_error *err)
{
    (void)s;
    (void)err;
    return 0;
}

int rec_bpf_feed_describe(const session *s, int detail, char *buf, size_t len)
{
    (void)s;
    (void)detail;
    (void)buf;
    (void)len;
    return -1;
}

#endif
