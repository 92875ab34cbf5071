/* SPDX-License-Identifier: BSD-3-Clause */
/* The samples taken, on their way to the recording. Taking a sample only
 * copies what was read into its target's ring; writing it (interning the
 * stack, resolving new addresses, compressing), and with --native mixing
 * in its unwind, is housekeeping, done while no target is held. */
#include <stdlib.h>
#include <string.h>

#include "base/rec_clock.h"
#include "session/rec_session_priv.h"
#include "base/rec_constants.h"

/* frames, with the functions ZAM inlined opened up where it has them. */
static const zs_frame *opened_up(session *s, slot *sl, const zs_frame *frames, size_t *n)
{
    size_t opened = sl->zam ? rec_zam_expand(sl->zam, frames, *n, s->opened, ZS_MAX_FRAMES) : 0;
    if (!opened)
        return frames;
    *n = opened;
    return s->opened;
}

/* The time of a sample's k-th write (k <= t.owed): once for its tick, once
 * more for each tick that passed while the target waited to reach its stop
 * (ptrace) or was away from its CPU (BPF, off_cpu). */
static uint64_t write_time_us(const session *s, tick_span t, uint64_t k)
{
    return rec_since_start_us(s, t.tick_ns + (k ? (t.last_ns - t.tick_ns) * k / t.owed : 0));
}

/* Writes one sample, each of its ticks. The ptrace sampler's samples are
 * wall-clock: none is marked off the CPU. waits: its native frames follow
 * (*first_us: when its first write went in, which names it). */
static int write_sample(session *s, slot *sl, const zs_frame *frames, size_t n, tick_span t,
                        int off_cpu, int waits, uint64_t *first_us, zs_error *err)
{
    frames = opened_up(s, sl, frames, &n);
    for (uint64_t k = 0; k <= t.owed; k++)
        if (rec_output_sample(s->out, sl->target.pid, write_time_us(s, t, k), frames, n, off_cpu,
                              waits, k ? NULL : first_us, err))
            return -1;
    return 0;
}

/* Once, when the unwinder is gone for good. */
static void say_native_broken(session *s, slot *sl)
{
    const char *why = rec_native_broken(sl->native);
    if (why && !sl->said_native_broken) {
        sl->said_native_broken = 1;
        rec_say(s, "warning: pid %d: no more native frames: %s; sampling goes on "
            "with script frames", (int)sl->target.pid, why);
    }
}

/* *id, the unwinder's location id, becomes the recording's: the location
 * written first when the part has not got it yet. */
static int native_location(session *s, slot *sl, uint64_t *id, zs_error *err)
{
    if (rec_output_native_known(s->out, sl->target.pid, *id, id))
        return 0;
    rec_out_location l;
    zs_module module;
    if (!rec_native_describe(sl->native, *id, &l, &module))
        return 0;
    return rec_output_native(s->out, sl->target.pid, &l, id, err);
}

/* A marker frame's location in the recording (id < 0: none), *id
 * becoming what the recording calls it. */
static int name_marker(session *s, slot *sl, int64_t *id, zs_error *err)
{
    uint64_t file_id = (uint64_t)*id;
    if (*id < 0)
        return 0;
    if (!rec_native_location_of(sl->native, file_id)) { /* never announced: no marker */
        *id = -1;
        return 0;
    }
    if (native_location(s, sl, &file_id, err))
        return -1;
    *id = (int64_t)file_id;
    return 0;
}

/* A sample running ZAM code: the words of the copy about to go to the
 * unwinder that may be its innermost ZAM body's instruction. */
static void collect_zam(slot *sl, pending_sample *p)
{
    const rec_raw_native *c = &sl->raw.native;
    rec_zam_copy copy = {&c->regs, c->stack, c->stack_len};
    if (sl->zam && c->taken && c->stack_len)
        rec_zam_collect(sl->zam, p->frames, p->addrs, p->nscript, &copy, &p->zam);
}

/* Its instruction, once the unwind (m frames in s->natives, outermost
 * first; m <= 0: failed) says where the innermost ZBody::Exec's frame
 * starts. */
static void choose_zam(session *s, slot *sl, const pending_sample *p, ssize_t m)
{
    if (!sl->zam || p->zam.frame < 0)
        return;
    uint64_t exec_sp = 0;
    for (ssize_t i = m; i-- > 0 && !exec_sp;) {
        const rec_native_location *l;
        if (zs_frame_is_native(&s->natives[i].frame) &&
            (l = rec_native_location_of(sl->native, s->natives[i].frame.stmt)) &&
            rec_zam_is_exec(sl->zam, l->symbol, rec_native_name(sl->native, l->symbol)))
            exec_sp = s->natives[i].sp;
    }
    s->zam_samples[rec_zam_choose(&p->zam, exec_sp, p->frames)]++;
}

/* The stack of a sample whose unwind came back (m > 0 frames in
 * s->natives) or failed (m <= 0): its native frames written to the
 * recording as locations (each once, with their symbols and modules; their
 * ids become the recording's) and the script frames put in their places. */
static const zs_frame *mix_native(session *s, slot *sl, const pending_sample *p, ssize_t m,
                                  unsigned marks, size_t *n, zs_error *err)
{
    zs_frame *script = p->frames;
    size_t nscript = p->nscript;
    *n = nscript;
    s->native_samples++;
    choose_zam(s, sl, p, m);
    if (m <= 0) {
        s->native_failed++;
        say_native_broken(s, sl);
        return script;
    }
    for (ssize_t i = 0; i < m; i++)
        if (zs_frame_is_native(&s->natives[i].frame) &&
            native_location(s, sl, &s->natives[i].frame.stmt, err))
            return NULL;
    /* A script frame with a null Func would read as native: never write one. */
    for (size_t i = 0; i < nscript; i++)
        if (!script[i].func)
            script[i].func = 1;
    rec_mixed_cut where = {-1, -1};
    if (marks & REC_NATIVE_TRUNCATED)
        where.truncated = REC_NATIVE_TRUNCATED_ID;
    if (marks & REC_NATIVE_ON_FIBER)
        where.fiber = REC_NATIVE_FIBER_ID;
    if (name_marker(s, sl, &where.truncated, err) || name_marker(s, sl, &where.fiber, err))
        return NULL;
    int mismatch;
    *n = rec_mixed_stack(script, p->addrs, nscript, p->cut, s->natives, (size_t)m, where, s->mixed,
                         ZS_MAX_FRAMES, &mismatch);
    s->native_mismatched += mismatch;
    return s->mixed;
}

/* A late sample's native frames, now that its unwind is back (m frames in
 * s->natives; m <= 0: failed, and the sample keeps its script frames):
 * one NATIVE_LATE record for each of its writes, at the times the writer
 * gave them (never before the write before, as the writer keeps them). */
static int follow(session *s, slot *sl, late_sample *l, ssize_t m, unsigned marks, zs_error *err)
{
    size_t n;
    const zs_frame *frames = mix_native(s, sl, &l->p, m, marks, &n, err);
    if (!frames)
        return -1;
    /* Failed, it still follows (script frames only): the converter then
     * waits for it no longer. */
    frames = opened_up(s, sl, frames, &n);
    uint64_t t = l->first_us;
    for (uint64_t k = 0; k <= l->p.ticks.owed; k++) {
        uint64_t at = write_time_us(s, l->p.ticks, k);
        t = k && at > t ? at : t;
        if (rec_output_native_late(s->out, sl->target.pid, t, frames, n, err))
            return -1;
    }
    s->native_followed += m > 0;
    return 0;
}

/* The answers to the unwinds of samples written before them, each as it
 * comes (waiting until wait_until); 1 when one is not back yet (the head's
 * answer comes after it), -1 on a write error. */
static int drain_late(session *s, slot *sl, uint64_t wait_until, zs_error *err)
{
    while (sl->nlate) {
        late_sample *l = &sl->late[sl->late_head];
        unsigned marks = 0;
        ssize_t m = rec_native_collect(sl->native, s->natives, REC_NATIVE_MAX_FRAMES, &marks, wait_until);
        if (m == REC_NATIVE_NOT_YET)
            return 1;
        sl->nunwinds--;
        int rc = follow(s, sl, l, m, marks, err);
        free(l->p.frames);
        l->p.frames = NULL;
        sl->late_head = (sl->late_head + 1) % REC_UNWINDS_OUT;
        sl->nlate--;
        if (rc)
            return -1;
    }
    return 0;
}

/* Writes one sample of the ring's head, its unwind waited for until
 * wait_until (rec_native_collect); 1 when that is not back yet and the
 * sample was taken at or after give_up_ns: an older one is written with
 * its script frames and its native frames follow when they come, so that
 * a frame cut or a full ring never waits long for an unwinder that is
 * slow (still reading the modules' tables at the start, or short of a
 * core) or stalled, and a killed recorder loses no sample. */
static int write_head(session *s, slot *sl, uint64_t wait_until, uint64_t give_up_ns, zs_error *err)
{
    pending_sample *p = &sl->pending[sl->pending_head];
    const zs_frame *script = p->frames; /* a late sample's once written: alive until its answer */
    int rc = 0;
    if (p->failed) {
        /* A read of a process that is gone fails; its exit comes next. */
        if (!sl->gone && !rec_target_alive(sl->target.pid, sl->exit_fd))
            rec_slot_mark_gone(s, sl);
    } else if (p->unwound) {
        unsigned marks = 0;
        int behind = drain_late(s, sl, wait_until, err);
        if (behind < 0)
            return -1;
        ssize_t m = behind ? REC_NATIVE_NOT_YET
                           : rec_native_collect(sl->native, s->natives, REC_NATIVE_MAX_FRAMES, &marks,
                                                wait_until);
        if (m == REC_NATIVE_NOT_YET && p->ticks.last_ns >= give_up_ns)
            return 1;
        if (m == REC_NATIVE_NOT_YET) {
            late_sample *l = &sl->late[(sl->late_head + sl->nlate) % REC_UNWINDS_OUT];
            rc = write_sample(s, sl, p->frames, p->nscript, p->ticks, p->off_cpu, 1, &l->first_us, err);
            l->p = *p; /* its frames now the late sample's */
            p->frames = NULL;
            sl->nlate++;
        } else {
            sl->nunwinds--;
            size_t n;
            const zs_frame *frames = mix_native(s, sl, p, m, marks, &n, err);
            rc = frames ? write_sample(s, sl, frames, n, p->ticks, p->off_cpu, 0, NULL, err) : -1;
        }
    } else {
        rc = write_sample(s, sl, p->frames, p->nscript, p->ticks, p->off_cpu, 0, NULL, err);
    }
    /* --top names script frames only (from live memory). */
    if (rc == 0 && !p->failed && s->top && sl->active) {
        size_t n = sl->zam ? rec_zam_expand(sl->zam, script, p->nscript, s->opened, ZS_MAX_FRAMES) : 0;
        rc = rec_top_sample(s->top, &sl->target, n ? s->opened : script, n ? n : p->nscript,
                            1 + p->ticks.owed, err);
    }
    free(p->frames);
    p->frames = NULL;
    sl->pending_head = (sl->pending_head + 1) % REC_PENDING_SAMPLES;
    sl->npending--;
    return rc;
}

/* Hands a capture kept with its sample to the unwinder. */
void rec_pending_submit(session *s, slot *sl)
{
    if (!sl->capture_unsent)
        return;
    sl->capture_unsent = 0;
    collect_zam(sl, &sl->pending[sl->unsent_at]);
    if (rec_native_is_copier(sl->native)) { /* no unwinder: the copy was for ZAM only */
        choose_zam(s, sl, &sl->pending[sl->unsent_at], 0);
        return;
    }
    rec_native_follow_modules(sl->native, rec_now_ns());
    int rc = rec_native_submit(sl->native, &sl->raw.native);
    if (rc == 0)
        return;
    pending_sample *p = &sl->pending[sl->unsent_at];
    p->unwound = 0;
    sl->nunwinds--;
    s->native_samples++;
    if (rc == REC_NATIVE_NOT_YET) { /* the unwinder's own queue full: behind, not broken */
        s->native_behind++;
        return;
    }
    s->native_failed++;
    say_native_broken(s, sl);
}

/* The target whose oldest waiting sample was taken first, or NULL. A
 * sample stands for its ticks up to last_ns (the ticks that passed while
 * its target was on its way to the stop); ordered by that, each sample of
 * a single tick is written at its own time, and only a late stop's earlier
 * ticks may be moved forward, within its own stop, where its stack was the
 * same. */
static slot *oldest_head(const session *s, int *any_full)
{
    slot *oldest = NULL;
    *any_full = 0;
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (!sl->npending)
            continue;
        *any_full |= sl->npending == REC_PENDING_SAMPLES;
        if (!oldest || sl->pending[sl->pending_head].ticks.last_ns <
                           oldest->pending[oldest->pending_head].ticks.last_ns)
            oldest = sl;
    }
    return oldest;
}

static uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

int rec_pending_write(session *s, uint64_t answers_until, uint64_t give_up_ns, zs_error *err)
{
    for (size_t i = 0; i < s->nslots; i++) {
        slot *each = s->slots[i];
        rec_pending_submit(s, each);
        /* The captures since the last write, together. */
        if (each->native && !rec_native_is_copier(each->native) && rec_native_flush(each->native) == -1)
            say_native_broken(s, each);
        /* Not only before a head that waits: the unwinds out (nunwinds)
         * count them, and new samples go without while that is full. At
         * the end, and of a target gone, every answer is waited for. */
        if (drain_late(s, each, each->gone ? REC_NATIVE_WAIT : answers_until, err) < 0)
            return -1;
    }
    /* In tick order across the targets: the recording's clock only goes
     * forward (a sample written after a later one would be moved to its
     * time). So a sample waiting for its unwind holds back the later ones
     * of every target, until it is older than give_up_ns, or until its
     * answer when its target is gone (its slot is to be freed) or this is
     * the end. A full ring waits for it, but not past REC_UNWIND_LATE_NS
     * after its tick: then it goes without. Each waits until answers_until
     * at least. */
    int any_full;
    slot *sl;
    while ((sl = oldest_head(s, &any_full))) {
        uint64_t tick = sl->pending[sl->pending_head].ticks.last_ns;
        uint64_t until = sl->gone ? REC_NATIVE_WAIT : later(answers_until, any_full ? tick + REC_UNWIND_LATE_NS : 0);
        int rc = write_head(s, sl, until, any_full ? UINT64_MAX : give_up_ns, err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            break;
    }
    return 0;
}

void rec_pending_keep(session *s, slot *sl, int with_stack, tick_span ticks, int off_cpu)
{
    const rec_raw_sample *raw = &sl->raw;
    rec_read_result res = raw->result;
    int captured = with_stack && raw->native.taken;
    sl->reads += raw->reads;
    sl->stack_copies += captured;
    sl->stack_copied += captured ? raw->native.stack_len : 0;
    if (res == REC_READ_TORN) {
        s->stats.torn++;
        sl->torn++;
        return;
    }
    if (sl->npending == REC_PENDING_SAMPLES) { /* the ring full: the writing is behind */
        s->stats.skipped += 1 + ticks.owed;
        sl->skipped_behind += 1 + ticks.owed;
        return;
    }
    unsigned at = (sl->pending_head + sl->npending) % REC_PENDING_SAMPLES;
    pending_sample *p = &sl->pending[at];
    *p = (pending_sample){.ticks = ticks};
    if (res == REC_READ_FAILED) {
        s->stats.failed++;
        sl->failed++;
        p->failed = 1;
        sl->npending++;
        return;
    }
    int cut;
    const zs_layout *l = &sl->target.layout;
    size_t nscript = rec_model_frames(l, raw, s->frames, &cut);
    /* 8.1+ with --native: the Frames' addresses too, placing each script
     * frame by address. */
    size_t naddrs = captured ? rec_model_frame_addrs(l, raw, s->frame_addrs) : 0;
    int by_address = naddrs == nscript && nscript > 0;
    zs_frame *copy = malloc((nscript ? nscript : 1) * (sizeof *copy + 8));
    if (!copy) {
        s->stats.failed++;
        sl->failed++;
        return;
    }
    memcpy(copy, s->frames, nscript * sizeof *copy);
    *p = (pending_sample){.ticks = ticks, .frames = copy, .off_cpu = off_cpu,
                          .addrs = by_address ? (uint64_t *)(copy + nscript) : NULL,
                          .nscript = nscript, .cut = cut, .zam.frame = -1};
    if (p->addrs)
        memcpy(p->addrs, s->frame_addrs, nscript * sizeof *p->addrs);
    s->stats.samples++;
    /* Off-CPU, the further ticks were zeek away, not on its way to a stop. */
    s->stats.credited += off_cpu ? 0 : ticks.owed;
    s->away += off_cpu ? ticks.owed : 0;
    s->stats.deep += cut;
    sl->cut += cut;
    sl->taken++;
    sl->credited += off_cpu ? 0 : ticks.owed;
    sl->away += off_cpu ? ticks.owed : 0;
    if (sl->capture_skipped) {
        sl->capture_skipped = 0;
        if (!rec_native_is_copier(sl->native)) {
            s->native_samples++;
            s->native_behind++;
        }
    } else if (captured && rec_native_is_copier(sl->native)) {
        sl->capture_unsent = 1; /* looked at by housekeeping (rec_pending_submit) */
        sl->unsent_at = at;
    } else if (captured) {
        /* The unwinder behind (short of a core on a busy host, or still
         * reading the modules' tables at the start): this sample goes
         * without native frames, counted, rather than the loop waiting. */
        if (sl->nunwinds == REC_UNWINDS_OUT) {
            s->native_samples++;
            s->native_behind++;
        } else {
            p->unwound = 1; /* counted when its answer is mixed in */
            sl->nunwinds++;
            sl->capture_unsent = 1;
            sl->unsent_at = at;
        }
    }
    sl->npending++;
}
