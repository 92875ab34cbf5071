/* SPDX-License-Identifier: BSD-3-Clause */
/* The BPF sampler as the session holds it: chosen (or ptrace instead)
 * before the targets are, pointed at each target's main thread and taken
 * off it again, and its counters for the end report. Its records come in
 * through rec_bpf_feed.c. Built without BPF, every call says so. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rec_clock.h"
#include "session/rec_session_priv.h"

#ifdef ZS_HAVE_BPF
#include "bpf/rec_bpf.h"

#define BPF_SELF_TIMING_ENV "ZEEK_SPY_BPF_SELF_TIMING"
#define BPF_LEGACY_ENV "ZEEK_SPY_BPF_LEGACY"
#define BPF_OFFCPU_ENV "ZEEK_SPY_BPF_OFFCPU"
#define BPF_SMALL_RING_ENV "ZEEK_SPY_BPF_SMALL_RING"
/* The looks at the end (rec_bpf_sampler_settle): a millisecond apart, a
 * tenth of a second at most (a busy zeek's waits, tens of microseconds
 * and a few percent of its time, are then found most of the time). */
#define SETTLE_NS 100000000ULL
#define SETTLE_GAP_NS 1000000L

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
    /* Off-CPU samples when due where the kernel can (6.1 on): no program on
     * the host's switches, a cost that follows the rate. For the tests and
     * the benchmarks, "switch" takes them at each switch as before 6.1. */
    const char *offcpu = getenv(BPF_OFFCPU_ENV);
    if (!offcpu || strcmp(offcpu, "switch"))
        flags |= REC_BPF_OFFCPU_WHEN_DUE;
    /* For the tests: the looks by task iterators, as on 6.1, or by
     * BPF_PROG_RUN at the rate, as where the kernel has no timers for them. */
    if (offcpu && !strcmp(offcpu, "due-iter"))
        flags |= REC_BPF_DUE_ITER;
    if (offcpu && !strcmp(offcpu, "due-run"))
        flags |= REC_BPF_DUE_RUN;
    /* For the tests: a ring that fills between two polls, so that its
     * records must wake the recorder (zs_sampler.bpf.c's wake_flag). */
    if (getenv(BPF_SMALL_RING_ENV))
        flags |= REC_BPF_SMALL_RING;
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

int rec_bpf_sampler_add(session *s, slot *sl, int with_stack, zs_error *err)
{
    rec_bpf_params p;
    if (rec_bpf_params_of(&sl->target, ZS_MAX_FRAMES, &p, err))
        return -1;
    p.stack_bytes = with_stack ? REC_NATIVE_STACK_BYTES : 0;
    /* Zeek runs its scripts on its main thread, whose tid is its pid. */
    return rec_bpf_add_target(s->o->bpf, sl->target.pid, sl->target.pid, &p, err);
}

void rec_bpf_sampler_remove(session *s, slot *sl)
{
    if (s->o->bpf)
        rec_bpf_remove_target(s->o->bpf, sl->target.pid);
}

int rec_bpf_sampler_due_hz(const session *s)
{
    return rec_bpf_offcpu_mode(s->o->bpf) == REC_BPF_OFFCPU_DUE;
}

int rec_bpf_sampler_watched(const session *s) { return rec_bpf_watched(s->o->bpf); }

void rec_bpf_sampler_look(session *s, slot *sl)
{
    sl->due_noticed = 0;
    s->bpf_due_errors += rec_bpf_due_thread(s->o->bpf, sl->target.pid) != 0;
}

int rec_bpf_sampler_notice_fd(const session *s) { return rec_bpf_notice_fd(s->o->bpf); }

int rec_bpf_sampler_settle(session *s, zs_error *err)
{
    uint64_t until = rec_now_ns() + SETTLE_NS;
    for (int first = 1; rec_bpf_settle(s->o->bpf, first) > 0 && rec_now_ns() < until; first = 0) {
        /* The ticks go on meanwhile: their records taken, or a ring sized
         * for a poll's wake-up fills (1000 Hz, many targets). */
        if (rec_bpf_feed_poll(s, BPF_POLL_BUDGET_NS, err) < 0)
            return -1;
        nanosleep(&(struct timespec){0, SETTLE_GAP_NS}, NULL);
    }
    return 0;
}

int rec_bpf_sampler_due(session *s)
{
    int busy = 0;
    if (rec_bpf_sampler_due_hz(s))
        s->bpf_due_errors += (uint64_t)rec_bpf_due(s->o->bpf, &busy);
    return busy;
}

int rec_bpf_sampler_describe(const session *s, int detail, char *buf, size_t len)
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
    rec_bpf_offcpu off = rec_bpf_offcpu_mode(s->o->bpf);
    const char *refused = rec_bpf_due_refused(s->o->bpf), *run_refused = rec_bpf_due_run_refused(s->o->bpf);
    char when[320];
    const char *watch_refused = rec_bpf_watch_refused(s->o->bpf);
    snprintf(when, sizeof when, "when due, %s%s%s%s%s", rec_bpf_due_way(s->o->bpf),
             run_refused[0] ? "; not by BPF_PROG_RUN: " : "", run_refused,
             watch_refused[0] && !run_refused[0] ? "; no timers in the kernel: " : "", watch_refused);
    size_t at = (size_t)snprintf(buf, len, "sampler: bpf (%s; off-CPU %s%s%s): ", rec_bpf_variant(s->o->bpf),
                                 off == REC_BPF_OFFCPU_DUE      ? when
                                 : off == REC_BPF_OFFCPU_SWITCH ? "at each switch"
                                                                : "none",
                                 refused[0] ? ", not when due: " : "", refused);
    if (off == REC_BPF_OFFCPU_SWITCH && at < len)
        at += (size_t)snprintf(buf + at, len - at, "%" PRIu64 " switches of a target off its CPU; ",
                               c[REC_BPF_C_LEAVES]);
    if (off == REC_BPF_OFFCPU_DUE && at < len)
        at += (size_t)snprintf(buf + at, len - at, "due off-CPU samples: %" PRIu64 " found the thread "
                               "on its CPU, %" PRIu64 " dropped (it ran while read), %" PRIu64
                               " not looked at; ", c[REC_BPF_C_DUE_ON_CPU], c[REC_BPF_C_DUE_RAN],
                               s->bpf_due_errors);
    if (c[REC_BPF_C_WATCHES] && at < len)
        at += (size_t)snprintf(buf + at, len - at, "timers in the kernel: %" PRIu64 " runs, %" PRIu64
                               " ns in all; ", c[REC_BPF_C_WATCHES], c[REC_BPF_C_WATCH_NS]);
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

int rec_bpf_sampler_add(session *s, slot *sl, int with_stack, zs_error *err)
{
    (void)s;
    (void)sl;
    (void)with_stack;
    return zs_fail(err, ZS_E_NO_BPF, "built without the BPF sampler");
}

void rec_bpf_sampler_remove(session *s, slot *sl)
{
    (void)s;
    (void)sl;
}

int rec_bpf_sampler_due_hz(const session *s)
{
    (void)s;
    return 0;
}

int rec_bpf_sampler_due(session *s)
{
    (void)s;
    return 0;
}

int rec_bpf_sampler_watched(const session *s)
{
    (void)s;
    return 0;
}

int rec_bpf_sampler_notice_fd(const session *s)
{
    (void)s;
    return -1;
}

void rec_bpf_sampler_look(session *s, slot *sl)
{
    (void)s;
    (void)sl;
}

int rec_bpf_sampler_settle(session *s, zs_error *err)
{
    (void)s;
    (void)err;
    return 0;
}

int rec_bpf_sampler_describe(const session *s, int detail, char *buf, size_t len)
{
    (void)s;
    (void)detail;
    (void)buf;
    (void)len;
    return -1;
}

#endif
