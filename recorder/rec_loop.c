/* The sampling loop: ticks on the clock, interrupts every target, takes
 * each stop as it arrives, writes what was read once the target runs
 * again, and once a second the counters, Zeek's clock and a zstd frame. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rec_clock.h"
#include "rec_session_priv.h"
#include "rec_signals.h"

/* The target a wait status is about: a tracee, or the launched child. */
static slot *find_slot(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && s->slots[i]->active)
            return s->slots[i];
    return NULL;
}

/* Writes one sample: once for its tick, and once more for each tick that
 * passed while the target waited to reach its stop. */
static tick_span one_tick(uint64_t tick_ns) { return (tick_span){tick_ns, 0, tick_ns}; }

static int write_sample(session *s, slot *sl, const zs_frame *frames, size_t n, tick_span t,
                        zs_error *err)
{
    for (uint64_t k = 0; k <= t.owed; k++) {
        uint64_t at = t.tick_ns + (k ? (t.last_ns - t.tick_ns) * k / t.owed : 0);
        if (rec_output_sample(s->out, sl->target.pid, rec_session_us(s, at), frames, n, err))
            return -1;
    }
    return 0;
}

/* Once, when the unwinder is gone for good. */
static void say_native_broken(session *s, slot *sl)
{
    const char *why = rec_native_broken(sl->native);
    if (why && !sl->said_native_broken) {
        sl->said_native_broken = 1;
        rec_session_say(s, "warning: pid %d: no more native frames: %s; sampling goes on "
            "with script frames", (int)sl->target.pid, why);
    }
}

/* A marker frame's location in the recording (id < 0: none), *id
 * becoming what the recording calls it. */
static int name_marker(session *s, slot *sl, int64_t *id, zs_error *err)
{
    uint64_t file_id;
    if (*id < 0)
        return 0;
    if (rec_output_native(s->out, sl->target.pid, sl->native, (uint64_t)*id, &file_id, err))
        return -1;
    *id = (int64_t)file_id;
    return 0;
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
    if (m <= 0) {
        s->native_failed++;
        say_native_broken(s, sl);
        return script;
    }
    for (ssize_t i = 0; i < m; i++)
        if (rec_output_native(s->out, sl->target.pid, sl->native, s->natives[i].id,
                              &s->natives[i].id, err))
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

/* Writes the samples whose unwinds are back, oldest first, until at most
 * keep are pending; with wait, blocks for them. */
static int native_drain_to(session *s, slot *sl, int wait, unsigned keep, zs_error *err)
{
    while (sl->npending > keep) {
        pending_sample *p = &sl->pending[sl->pending_head];
        int rc;
        if (p->unwound) {
            unsigned marks = 0;
            ssize_t m = rec_native_collect(sl->native, s->natives, REC_NATIVE_MAX_FRAMES, &marks, wait);
            if (m == REC_NATIVE_NOT_YET)
                return 0;
            size_t n;
            const zs_frame *frames = mix_native(s, sl, p, m, marks, &n, err);
            rc = frames ? write_sample(s, sl, frames, n, p->ticks, err) : -1;
            sl->nunwinds--;
        } else {
            rc = write_sample(s, sl, p->frames, p->nscript, p->ticks, err);
        }
        free(p->frames);
        p->frames = NULL;
        sl->pending_head = (sl->pending_head + 1) % NATIVE_PENDING;
        sl->npending--;
        if (rc)
            return -1;
    }
    return 0;
}

int rec_loop_native_drain(session *s, slot *sl, int wait, zs_error *err)
{
    return native_drain_to(s, sl, wait, 0, err);
}

/* Every target's answered unwinds; with wait, all of them. */
static int native_drain_all(session *s, int wait, zs_error *err)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->npending && rec_loop_native_drain(s, s->slots[i], wait, err))
            return -1;
    return 0;
}

/* Hands the capture to the unwinder and keeps the script frames until its
 * answer, behind those still waiting. -1 on error. */
static int defer_native(session *s, slot *sl, size_t nscript, int cut, tick_span ticks,
                        zs_error *err)
{
    /* Full only when the unwinder has not answered for NATIVE_UNWINDS
     * samples and as many more came meanwhile: then wait for one. */
    if (sl->npending == NATIVE_PENDING &&
        (native_drain_to(s, sl, 0, 0, err) ||
         (sl->npending == NATIVE_PENDING && native_drain_to(s, sl, 1, NATIVE_PENDING - 1, err))))
        return -1;
    /* 8.1+: the Frames' addresses too, placing each script frame by address. */
    size_t naddrs = rec_sampler_frame_addrs(sl->sampler, s->frame_addrs);
    int by_address = naddrs == nscript && nscript > 0;
    zs_frame *copy = malloc((nscript ? nscript : 1) * (sizeof *copy + 8));
    if (!copy)
        return zs_fail(err, ZS_E_NOMEM, "native samples");
    memcpy(copy, s->frames, nscript * sizeof *copy);
    uint64_t *addrs = by_address ? (uint64_t *)(copy + nscript) : NULL;
    if (addrs)
        memcpy(addrs, s->frame_addrs, nscript * sizeof *addrs);
    /* The unwinder behind (short of a core on a busy host, or still reading
     * the modules' tables at the start): this sample goes without native
     * frames, counted, rather than the loop waiting and skipping ticks. */
    int unwound = 0;
    if (sl->nunwinds == NATIVE_UNWINDS) {
        s->native_samples++;
        s->native_behind++;
    } else if (rec_native_submit(sl->native) != 0) {
        s->native_samples++;
        s->native_failed++;
        say_native_broken(s, sl);
    } else {
        unwound = 1; /* counted when its answer is mixed in */
        sl->nunwinds++;
    }
    sl->pending[(sl->pending_head + sl->npending) % NATIVE_PENDING] =
        (pending_sample){ticks, copy, addrs, nscript, cut, unwound};
    sl->npending++;
    return 0;
}

/* The stack just read: written at once, or with --native once its unwind
 * is back. */
static int record(session *s, slot *sl, rec_read_result res, tick_span ticks, zs_error *err)
{
    if (res == REC_READ_TORN) {
        s->stats.torn++;
        return 0;
    }
    if (res == REC_READ_FAILED) {
        s->stats.failed++;
        return rec_target_alive(sl->target.pid) ? 0 : rec_session_target_gone(s, sl, err);
    }
    int cut;
    size_t nscript = rec_sampler_frames(sl->sampler, s->frames, &cut);
    s->stats.samples++;
    s->stats.credited += ticks.owed;
    s->stats.deep += cut;
    sl->taken++;
    sl->credited += ticks.owed;
    int now = 1;
    if (sl->native_taken) {
        sl->native_taken = 0;
        if ((now = defer_native(s, sl, nscript, cut, ticks, err)) < 0)
            return -1;
    }
    if (now && write_sample(s, sl, s->frames, nscript, ticks, err))
        return -1;
    /* --top names script frames only (from live memory). */
    return s->top ? rec_top_sample(s->top, &sl->target, s->frames, nscript, 1 + ticks.owed, err) : 0;
}

/* The target is in the stop its interrupt asked for: read, resume at once,
 * then write. */
static int take(session *s, slot *sl, zs_error *err)
{
    uint64_t seen = rec_now_ns();
    /* --native: the registers first, so that the stack copy can ride on
     * the script frames' last read. */
    int regs = sl->native && rec_native_regs(sl->native) == 0;
    rec_read_result res = rec_sampler_read(sl->sampler);
    sl->native_taken = regs && res == REC_READ_OK &&
                       rec_native_capture(sl->native, rec_sampler_rider_got(sl->sampler),
                                          rec_sampler_outermost_frame(sl->sampler)) == 0;
    rec_ptrace_resume(&sl->tracee);
    uint64_t done = rec_now_ns(), asked = sl->tracee.interrupt_ns;
    rec_hist_add(&s->stats.window, done - asked);
    rec_hist_add(&s->stats.wait, seen - asked);
    rec_hist_add(&s->stats.held, done - seen);
    sl->wanted = 0;
    return record(s, sl, res, sl->ticks, err);
}

/* Handles every state change that has arrived, from any target. */
static int collect(session *s, zs_error *err)
{
    int status;
    pid_t pid;
    while ((pid = rec_ptrace_collect(&status)) > 0) {
        slot *sl = find_slot(s, pid);
        if (!sl) { /* an unwinder that ended */
            for (size_t i = 0; i < s->nslots; i++)
                if (s->slots[i]->native)
                    rec_native_reaped(s->slots[i]->native, pid);
            continue;
        }
        rec_tracee_state st = rec_ptrace_update(&sl->tracee, status);
        if (st == REC_TRACEE_GONE) {
            if (rec_session_target_gone(s, sl, err))
                return -1;
        } else if (st == REC_TRACEE_STOPPED) {
            if (sl->wanted) {
                if (take(s, sl, err))
                    return -1;
            } else {
                rec_ptrace_resume(&sl->tracee); /* a signal to pass on, a late interrupt */
            }
        }
    }
    return 0;
}

static int interrupted(const session *s)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->active && s->slots[i]->wanted)
            return 1;
    return 0;
}

/* Collects without sleeping until no interrupt is out or until_ns. */
static int spin_collect(session *s, uint64_t until_ns, zs_error *err)
{
    while (interrupted(s) && rec_now_ns() < until_ns)
        if (collect(s, err))
            return -1;
    return 0;
}

/* One tick for one blocking target: interrupt it, never wait for it here.
 * Returns 1 when it was interrupted from another CPU than its own. */
static int tick_blocking(session *s, slot *sl, uint64_t tick_ns, int follow, zs_error *err)
{
    if (sl->wanted) { /* still on its way to the previous tick's stop */
        if (tick_ns - sl->tracee.interrupt_ns < STOP_DEADLINE_NS) {
            sl->ticks.owed++;
            sl->ticks.last_ns = tick_ns;
            return 0;
        }
        s->stats.skipped++;
        if (!sl->warned_late) {
            sl->warned_late = 1;
            s->stats.late_stops++;
            rec_session_say(s, "warning: pid %d has not stopped 1 s after an interrupt (uninterruptible sleep?); "
                "its ticks are skipped until it does, and it keeps running",
                (int)sl->target.pid);
        }
        return 0;
    }
    sl->warned_late = 0;
    if (sl->tracee.job_stopped) {
        /* Held by job control: its stack cannot change, read it as it is. */
        return record(s, sl, rec_sampler_read(sl->sampler), one_tick(tick_ns), err) ? -1 : 0;
    }
    /* Where it runs: its pinned CPU, else as /proc last saw it (an idle CPU
     * may still pull it away once the recorder preempts it: a quiet 2-core
     * VM measured stop p50 14-16 us pinned, 38-50 us unpinned, 54-92 us
     * without following). */
    int cpu = sl->pinned_cpu;
    if (cpu < 0 && (follow || !s->spin_backoff))
        cpu = rec_cpu_current(&sl->cpu);
    if (follow)
        s->moved |= rec_cpu_move_self(cpu, &s->home);
    rec_sampler_warm(sl->sampler);
    if (rec_ptrace_interrupt(&sl->tracee, rec_now_ns()))
        return 0; /* gone: its exit status is collected next */
    sl->wanted = 1;
    sl->ticks = one_tick(tick_ns);
    return cpu >= 0 && cpu != sched_getcpu();
}

/* Interrupts every target first and takes each stop as it arrives (the
 * main loop collects them): a tick costs about one stop, not the sum of
 * the targets' waits for a core. With one pinned target the recorder first
 * moves to that CPU (rec_cpu.h says why); with several it cannot be on
 * each one's CPU at once. */
static int tick(session *s, uint64_t tick_ns, zs_error *err)
{
    int elsewhere = 0;
    /* From the target's own CPU only as a real-time process: at normal
     * priority the recorder would run there only when the target yields,
     * and sample it idle (+35 points of idle measured). */
    int follow = s->follow_cpu && s->active == 1 && s->realtime && !rec_signals_demoted();
    if (!follow && s->moved) {
        sched_setaffinity(0, sizeof s->home, &s->home);
        s->moved = 0;
    }
    /* Each interrupt takes a few microseconds (tens on a VM), so the last
     * target of a tick is reached well after the tick, when it may have
     * moved on, most often out of a wait (likely one whose timer the tick's
     * own timer interrupt fired within its slack: inferred, not measured);
     * later in the order means seen later in that transition (measured,
     * --all over 8 doubles under load: 95.6-99 % of samples agreeing with
     * the double's state at the tick, falling with the position). Starting
     * at a random target shares that out instead of always charging the
     * same one. Tick times are uniformly random, so their microseconds
     * serve as the draw. */
    size_t start = s->nslots ? (size_t)(tick_ns / 1000) % s->nslots : 0;
    for (size_t k = 0; k < s->nslots; k++) {
        slot *sl = s->slots[(start + k) % s->nslots];
        if (!sl->active)
            continue;
        int rc = s->o->nonblocking ? record(s, sl, rec_sampler_read(sl->sampler), one_tick(tick_ns), err)
                                   : tick_blocking(s, sl, tick_ns, follow, err);
        if (rc < 0)
            return -1;
        elsewhere |= rc > 0;
    }
    if (s->spin_backoff) {
        s->spin_backoff--;
        return 0;
    }
    if (!elsewhere)
        return 0;
    if (spin_collect(s, rec_now_ns() + SPIN_NS, err))
        return -1;
    if (interrupted(s)) /* in vain: a busy host; try again in a while */
        s->spin_backoff = SPIN_BACKOFF_TICKS;
    return 0;
}

static void print_stats(const session *s, uint64_t now)
{
    double elapsed = (double)(now - s->start_ns) / 1e9;
    uint64_t bytes = rec_output_bytes(s->out), written = s->stats.samples + s->stats.credited;
    rec_session_say(s,
        "%.1f s, %" PRIu64 " samples, %" PRIu64 " skipped, %.1f Hz, stop p50 %.0f us p99 %.0f us, "
        "held p50 %.0f us p99 %.0f us, overhead %.2f %%, %.1f KiB written, %.2f B/sample",
        elapsed, written, s->stats.skipped, elapsed > 0 ? written / elapsed : 0,
        rec_hist_quantile_us(&s->stats.window, 0.5), rec_hist_quantile_us(&s->stats.window, 0.99),
        rec_hist_quantile_us(&s->stats.held, 0.5), rec_hist_quantile_us(&s->stats.held, 0.99),
        elapsed > 0 ? 100.0 * (double)s->stats.window.total_ns / 1e9 / elapsed / (double)(s->active ? s->active : 1) : 0, bytes / 1024.0,
        written ? (double)bytes / (double)written : 0);
}

/* One event with what a counter gained since it was last written. */
static int write_count(session *s, uint64_t t_us, zs_event_kind kind, uint64_t total,
                       uint64_t *written, zs_error *err)
{
    if (total == *written)
        return 0;
    if (rec_output_event(s->out, t_us, 0, kind, total - *written, "", err))
        return -1;
    *written = total;
    return 0;
}

/* Once a second: account skipped ticks and torn reads, note Zeek's clock,
 * and cut a zstd frame so a killed recorder loses at most this second. */
static int second_tick(session *s, uint64_t now, int last, zs_error *err)
{
    uint64_t t = rec_session_us(s, now);
    if (write_count(s, t, ZS_EV_SKIPPED, s->stats.skipped, &s->skipped_written, err) ||
        write_count(s, t, ZS_EV_TORN, s->stats.torn, &s->torn_written, err) ||
        write_count(s, t, ZS_EV_DEEP_STACK, s->stats.deep, &s->deep_written, err) ||
        write_count(s, t, ZS_EV_SAMPLE_FAILED, s->stats.failed, &s->failed_written, err) ||
        write_count(s, t, ZS_EV_CREDITED, s->stats.credited, &s->credited_written, err) ||
        write_count(s, t, ZS_EV_LATE_STOP, s->stats.late_stops, &s->late_written, err))
        return -1;
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (sl->active)
            sl->pinned_cpu = rec_cpu_pinned(sl->target.pid); /* taskset may change it */
        double nt = sl->sampler ? rec_sampler_network_time(sl->sampler) : 0;
        if (sl->active && nt != sl->last_nettime &&
            rec_output_nettime(s->out, t, sl->target.pid, nt, err))
            return -1;
        sl->last_nettime = nt;
    }
    if (rec_signals_demoted() && !s->said_demoted) {
        s->said_demoted = 1;
        rec_session_say(s, "note: the real-time CPU budget ran out (every tick late); "
            "continuing at normal priority");
    }
    return rec_output_tick(s->out, now, !last, err);
}

/* Ticks on the clock; between them, sleeps until a target's stop or a
 * signal arrives, and handles it at once. */
int rec_loop_run(session *s, zs_error *err)
{
    rec_clock clock;
    rec_clock_init(&clock, s->o->rate_hz, 1, rec_now_ns() ^ (uint64_t)getpid());
    s->period_ns = clock.period_ns;
    uint64_t end = s->o->duration_s > 0 ? s->start_ns + (uint64_t)(s->o->duration_s * 1e9) : 0;
    uint64_t next_second = s->start_ns + 1000000000ULL, next_scan = s->start_ns + RESCAN_NS;
    uint64_t stats_every = (uint64_t)(s->o->stats_interval_s * 1e9);
    uint64_t next_stats = s->start_ns + stats_every;

    while (!rec_signals_stop_requested() && (s->active || s->o->all)) {
        uint64_t now = rec_now_ns();
        if (now < clock.deadline_ns) {
            /* --top draws and reads keys only while no target is held. */
            if (s->top && !interrupted(s) && rec_top_idle(s->top, now, &s->stats))
                break;
            rec_ptrace_wait(end && end < clock.deadline_ns ? end : clock.deadline_ns);
            if (collect(s, err) || native_drain_all(s, 0, err))
                return -1;
            continue;
        }
        if (end && now >= end)
            break;
        if (tick(s, now, err) || native_drain_all(s, 0, err))
            return -1;
        s->stats.skipped += rec_clock_advance(&clock, rec_now_ns());
        if (now >= next_second) {
            if (second_tick(s, now, 0, err))
                return -1;
            next_second = now + 1000000000ULL;
        }
        if (s->o->all && now >= next_scan) {
            if (rec_session_scan(s, err))
                return -1;
            next_scan = now + RESCAN_NS;
        }
        if (stats_every && now >= next_stats) {
            print_stats(s, now);
            next_stats += stats_every;
        }
    }
    if (native_drain_all(s, 1, err))
        return -1;
    return second_tick(s, rec_now_ns(), 1, err);
}

void rec_loop_report(const session *s)
{
    double secs = (double)(rec_now_ns() - s->start_ns) / 1e9;
    const rec_stats *st = &s->stats;
    uint64_t bytes = rec_output_bytes(s->out), calls = 0, written = st->samples + st->credited;
    unsigned parts = rec_output_parts(s->out);
    for (size_t i = 0; i < s->nslots; i++)
        calls += s->slots[i]->sampler ? rec_sampler_calls(s->slots[i]->sampler) : 0;
    if (parts > 1)
        rec_session_say(s, "wrote %u parts, the last %s: %" PRIu64 " samples in %.1f s, %.1f KiB (%.2f B/sample)",
            parts, rec_output_path(s->out), written, secs, bytes / 1024.0,
            written ? (double)bytes / (double)written : 0);
    else
        rec_session_say(s, "wrote %s: %" PRIu64 " samples in %.1f s, %zu distinct stacks, %.1f KiB (%.2f B/sample)",
            rec_output_path(s->out), written, secs, rec_output_stacks(s->out), bytes / 1024.0,
            written ? (double)bytes / (double)written : 0);
    size_t sampled = 0;
    for (size_t i = 0; i < s->nslots; i++)
        sampled += s->slots[i]->taken > 0;
    double target_secs = secs * (double)(sampled ? sampled : 1);
    if (!s->o->nonblocking && st->samples) {
        rec_session_say(s, "stop time per sample: p50 %.0f us, p99 %.0f us, max %.0f us; target overhead %.2f %% "
            "at most, %.2f %% held for certain; %.2f reads/sample",
            rec_hist_quantile_us(&st->window, 0.5), rec_hist_quantile_us(&st->window, 0.99),
            st->window.max_ns / 1e3, 100.0 * (double)st->window.total_ns / 1e9 / target_secs,
            100.0 * (double)st->held.total_ns / 1e9 / target_secs, (double)calls / (double)st->samples);
        rec_session_say(s, "of which waiting for the stop: p50 %.0f us, p99 %.0f us (on a busy host mostly the "
            "target waiting for a core, as it would anyway); held after the stop was seen: p50 %.0f "
            "us, p99 %.0f us, max %.0f us",
            rec_hist_quantile_us(&st->wait, 0.5), rec_hist_quantile_us(&st->wait, 0.99),
            rec_hist_quantile_us(&st->held, 0.5), rec_hist_quantile_us(&st->held, 0.99),
            st->held.max_ns / 1e3);
    }
    if (!s->o->nonblocking && st->samples && rec_hist_quantile_us(&st->wait, 0.5) > 30 &&
        rec_hist_quantile_us(&st->wait, 0.99) < 1000) {
        /* Slow stops on a quiet host: where the recorder ran, not the load. */
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i]->taken && s->slots[i]->pinned_cpu < 0)
                rec_session_say(s, "note: pid %d may run on any CPU, so its stops pay cross-CPU wake-ups; "
                    "pinned (e.g. pin_cpus in zeekctl's node.cfg) they take about 15 us",
                    (int)s->slots[i]->target.pid);
    }
    if (st->credited)
        rec_session_say(s, "%" PRIu64 " of %" PRIu64 " samples (%.1f %%) stand for ticks that passed while a "
            "target was on its way to its stop (waiting for a core on a busy host, or in an "
            "uninterruptible wait); its stack could not change meanwhile, so the shares stay right",
            st->credited, written, 100.0 * (double)st->credited / (double)written);
    for (size_t i = 0; i < s->nslots && (s->nslots > 1 || st->credited); i++) {
        const slot *sl = s->slots[i];
        if (sl->taken)
            rec_session_say(s, "pid %d: %" PRIu64 " samples (%.1f Hz), %" PRIu64 " of them credited",
                (int)sl->target.pid, sl->taken + sl->credited,
                secs > 0 ? (double)(sl->taken + sl->credited) / secs : 0, sl->credited);
    }
    if (s->native_samples) {
        uint64_t truncated = 0, copies = 0, copied = 0;
        for (size_t i = 0; i < s->nslots; i++) {
            const rec_native *n = s->slots[i]->native;
            uint64_t c = 0;
            truncated += n ? rec_native_truncated(n) : 0;
            copied += n ? rec_native_copied(n, &c) : 0;
            copies += c;
        }
        rec_session_say(s, "native frames: %" PRIu64 " stacks unwound; %" PRIu64 " unwinds failed, %" PRIu64
            " did not match the script frames (kept as script frames and the native leaf), %" PRIu64
            " deeper than their stack copy (outermost frames missing); stack copies averaged %" PRIu64
            " bytes (8.1+: to %d KiB above the outermost script frame, %d-%d KiB; else %d KiB)",
            s->native_samples, s->native_failed, s->native_mismatched, truncated,
            copies ? copied / copies : 0, REC_NATIVE_STACK_SLACK >> 10, REC_NATIVE_STACK_MIN >> 10,
            REC_NATIVE_STACK_BYTES >> 10, REC_NATIVE_STACK_BYTES >> 10);
        if (s->native_behind)
            rec_session_say(s, "native frames: %" PRIu64 " samples written without them: the unwinder "
                "was behind (short of a core, or still reading the modules' tables at the start)",
                s->native_behind);
    }
    if (st->skipped)
        rec_session_say(s, "%" PRIu64 " sampling ticks were skipped (recorder late, or a target that did not stop)",
            st->skipped);
    if (st->torn)
        rec_session_say(s, "%" PRIu64 " torn reads discarded (nonblocking)", st->torn);
}

