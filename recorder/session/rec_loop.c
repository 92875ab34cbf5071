/* SPDX-License-Identifier: BSD-3-Clause */
/* The sampling loop: ticks on the clock, interrupts every target, takes
 * each stop as it arrives, writes what was read once the target runs
 * again, and at each cut (once a second, less often at low rates) the
 * counters, Zeek's clock and a zstd frame. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rec_clock.h"
#include "base/rec_constants.h"
#include "session/rec_session_priv.h"
#include "base/rec_signals.h"
#include "base/rec_waiter.h"
#include "bpf/rec_bpf_event.h"
#include "frames/rec_memory.h"

/* The target a wait status is about: a tracee, or the launched child. */
static slot *find_slot(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && s->slots[i]->active)
            return s->slots[i];
    return NULL;
}

static tick_span one_tick(uint64_t tick_ns) { return (tick_span){tick_ns, 0, tick_ns}; }

/* Takes a sample of a target that runs (nonblocking) or is held by job
 * control, script frames only, and keeps it. */
static void take_running(session *s, slot *sl, uint64_t tick_ns)
{
    rec_sampler_take(sl->sampler, &sl->raw, NULL);
    rec_pending_keep(s, sl, 0, one_tick(tick_ns), 0);
}

/* --native (or ZAM's copy): the registers and stack are asked for, sized
 * by what the unwinds said so far; NULL when not. A capture still waiting
 * to go to the unwinder (housekeeping has not run since: another target
 * slow to stop) is not overwritten: this sample goes without. */
static const rec_stack_plan *stack_wanted(slot *sl, rec_stack_plan *plan)
{
    sl->capture_skipped = sl->native && sl->capture_unsent;
    if (!sl->native || sl->capture_unsent)
        return NULL;
    rec_native_stack_plan(sl->native, plan);
    return plan;
}

/* The target is in the stop its interrupt asked for: the window fills the
 * capture record, the target resumes at once, the record is kept. */
static void take(session *s, slot *sl)
{
    uint64_t seen = rec_now_ns();
    rec_stack_plan plan;
    const rec_stack_plan *stack = stack_wanted(sl, &plan);
    rec_sampler_take(sl->sampler, &sl->raw, stack);
    rec_ptrace_resume(&sl->tracee);
    uint64_t done = rec_now_ns(), asked = sl->tracee.interrupt_ns;
    /* Of the wait for the stop, the part the loop spent on housekeeping. */
    uint64_t elsewhere = s->elsewhere_ns - sl->elsewhere_at_interrupt;
    rec_hist_add(&s->stats.window, done - asked);
    if (done - asked > sl->stop_max_ns)
        sl->stop_max_ns = done - asked;
    rec_hist_add(&s->stats.wait, seen - asked - (elsewhere < seen - asked ? elsewhere : seen - asked));
    rec_hist_add(&s->stats.elsewhere, elsewhere);
    s->stats.elsewhere_samples += elsewhere > 0;
    sl->elsewhere_ns += elsewhere;
    sl->elsewhere_samples += elsewhere > 0;
    rec_hist_add(&s->stats.held, done - seen);
    if (done - seen > sl->held_max_ns)
        sl->held_max_ns = done - seen;
    sl->wanted = 0;
    rec_pending_keep(s, sl, stack != NULL, sl->ticks, 0);
}

/* Handles every state change that has arrived, from any target. */
static void collect(session *s)
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
        if (st == REC_TRACEE_GONE)
            rec_slot_mark_gone(s, sl);
        else if (st == REC_TRACEE_STOPPED && sl->wanted)
            take(s, sl);
        else if (st == REC_TRACEE_STOPPED)
            rec_ptrace_resume(&sl->tracee); /* a signal to pass on, a late interrupt */
    }
}

static int interrupted(const session *s)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->active && s->slots[i]->wanted)
            return 1;
    return 0;
}

/* Collects without sleeping until no interrupt is out or until_ns. */
static void spin_collect(session *s, uint64_t until_ns)
{
    while (interrupted(s) && rec_now_ns() < until_ns)
        collect(s);
}

/* 0 when no interrupt is out that its target may still answer soon, else
 * when the youngest one passes HOLD_GRACE_NS. */
static uint64_t held_until(const session *s, uint64_t now)
{
    uint64_t until = 0;
    for (size_t i = 0; i < s->nslots; i++) {
        const slot *sl = s->slots[i];
        uint64_t grace = sl->tracee.interrupt_ns + HOLD_GRACE_NS;
        if (sl->active && sl->wanted && grace > now && grace > until)
            until = grace;
    }
    return until;
}

/* Back to the CPUs the recorder was started on, after following a target. */
static void go_home(session *s)
{
    if (s->moved) {
        sched_setaffinity(0, sizeof s->home, &s->home);
        s->moved = 0;
    }
}

/* One tick for one blocking target: interrupt it, never wait for it here.
 * Returns 1 when it was interrupted from another CPU than its own. */
static int tick_blocking(session *s, slot *sl, uint64_t tick_ns, int follow)
{
    if (sl->wanted) { /* still on its way to the previous tick's stop */
        if (tick_ns - sl->tracee.interrupt_ns < REC_STOP_DEADLINE_NS) {
            sl->ticks.owed++;
            sl->ticks.last_ns = tick_ns;
            return 0;
        }
        s->stats.skipped++;
        sl->skipped_stuck++;
        if (!sl->warned_late) {
            sl->warned_late = 1;
            s->stats.late_stops++;
            rec_say(s, "warning: pid %d has not stopped 1 s after an interrupt (uninterruptible sleep?); "
                "its ticks are skipped until it does, and it keeps running",
                (int)sl->target.pid);
        }
        return 0;
    }
    sl->warned_late = 0;
    if (sl->npending == REC_PENDING_SAMPLES) { /* nowhere to keep its sample */
        s->stats.skipped++;
        sl->skipped_behind++;
        return 0;
    }
    if (sl->tracee.job_stopped) {
        /* Held by job control: its stack cannot change, read it as it is. */
        take_running(s, sl, tick_ns);
        return 0;
    }

    /* Where it runs: its pinned CPU, else as /proc last saw it. Only a
     * pinned target is followed there: resumed by a recorder that occupies
     * its CPU, a free target is woken onto an idle one, and moves with
     * every sample, its caches left behind (measured on a quiet 2-core VM,
     * 100 Hz: 97 migrations a second followed, 0.5 not). Pinned, the stop
     * and the resume stay on one CPU (stop p50 14-16 us, against 54-92 us
     * from another). */
    int cpu = sl->pinned_cpu;
    if (cpu < 0 && !s->spin_backoff)
        cpu = rec_cpu_current(&sl->cpu);
    if (follow && sl->pinned_cpu >= 0) {
        s->moved |= rec_cpu_move_self(cpu, &s->home);
    } else {
        go_home(s);
    }
    rec_sampler_warm(sl->sampler, &sl->raw);
    if (rec_ptrace_interrupt(&sl->tracee, rec_now_ns()))
        return 0; /* gone: its exit status is collected next */
    sl->wanted = 1;
    sl->elsewhere_at_interrupt = s->elsewhere_ns;
    sl->ticks = one_tick(tick_ns);
    return cpu >= 0 && cpu != sched_getcpu();
}

/* Interrupts every target first and takes each stop as it arrives (the
 * main loop collects them): a tick costs about one stop, not the sum of
 * the targets' waits for a core. With one pinned target the recorder first
 * moves to that CPU (rec_cpu.h says why); with several it cannot be on
 * each one's CPU at once. */
static void tick(session *s, uint64_t tick_ns)
{
    int elsewhere = 0;
    /* From a pinned target's own CPU only as a real-time process: at
     * normal priority the recorder would run there only when the target
     * yields, and sample it idle (+35 points of idle measured). */
    int follow = s->follow_cpu && s->active == 1 && s->realtime && !rec_signals_demoted();
    if (!follow)
        go_home(s);
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
        if (s->o->nonblocking) {
            take_running(s, sl, tick_ns);
            continue;
        }
        elsewhere |= tick_blocking(s, sl, tick_ns, follow);
    }
    if (s->spin_backoff) {
        s->spin_backoff--;
        return;
    }
    if (!elsewhere)
        return;
    spin_collect(s, rec_now_ns() + SPIN_NS);
    if (interrupted(s)) /* in vain: a busy host; try again in a while */
        s->spin_backoff = SPIN_BACKOFF_TICKS;
}

/* At each cut, without stopping zeek: its load (rec_load.h) and, for
 * the BPF sampler, whose records carry no network_time (a page away from
 * call_stack: a cold page more for every tick), its clock, in the same
 * read. A failed read keeps the last network_time. */
static int read_load(session *s, slot *sl, uint64_t t_us, uint64_t now, zs_error *err)
{
    if (!sl->load_ready) {
        const rec_target *t = &sl->target;
        rec_load_globals g = {t->pktsrc.iosource_mgr, t->pktsrc.pcap_vtable, t->pktsrc.af_packet_vtable,
                              t->network_time};
        rec_load_init(&sl->load, t->pid, &t->layout, g);
        sl->load_ready = 1;
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    zs_load l = {.t_us = t_us, .pid = (uint32_t)sl->target.pid};
    double nt = -1;
    rec_load_read(&sl->load, now, (uint64_t)wall.tv_sec * 1000000000ULL + (uint64_t)wall.tv_nsec, &l, &nt);
    if (sl->bpf_added && nt >= 0)
        sl->raw.network_time = nt;
    return l.what ? rec_output_load(s->out, &l, err) : 0;
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

/* At the cut (once a second; less often at low rates, rec_session_priv.h:
 * CUT_SAMPLES): account skipped ticks and torn reads, note Zeek's clock
 * and load, and cut a zstd frame so a killed recorder loses at most what
 * came since. */
static int cut_tick(session *s, uint64_t now, int last, zs_error *err)
{
    uint64_t t = rec_since_start_us(s, now);
    if (write_count(s, t, ZS_EV_SKIPPED, s->stats.skipped, &s->skipped_written, err) ||
        write_count(s, t, ZS_EV_TORN, s->stats.torn, &s->torn_written, err) ||
        write_count(s, t, ZS_EV_DEEP_STACK, s->stats.deep, &s->deep_written, err) ||
        write_count(s, t, ZS_EV_SAMPLE_FAILED, s->stats.failed, &s->failed_written, err) ||
        write_count(s, t, ZS_EV_CREDITED, s->stats.credited, &s->credited_written, err) ||
        write_count(s, t, ZS_EV_LATE_STOP, s->stats.late_stops, &s->late_written, err))
        return -1;
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (sl->active && !s->o->bpf) /* where ptrace follows it; taskset may change it */
            sl->pinned_cpu = rec_cpu_pinned(sl->target.pid);
        /* BPF: a process that exits sends nothing more; ask /proc (a
         * launched child's exit is collected as a tracee's). */
        if (sl->active && s->o->bpf && !s->o->command && !rec_target_alive(sl->target.pid, sl->exit_fd))
            rec_slot_mark_gone(s, sl);
        if (sl->active && read_load(s, sl, t, now, err))
            return -1;
        double nt = sl->sampler || sl->bpf_added ? sl->raw.network_time : 0; /* the last sample's */
        if (sl->active && nt != sl->last_nettime &&
            rec_output_nettime(s->out, t, sl->target.pid, nt, err))
            return -1;
        sl->last_nettime = nt;
    }
    if (rec_signals_demoted() && !s->said_demoted) {
        s->said_demoted = 1;
        rec_say(s, "note: the real-time CPU budget ran out (every tick late); "
            "continuing at normal priority");
    }
    int switch_now = rec_signals_take_switch();
    if (switch_now && !rec_output_rotating(s->out))
        rec_say(s, "note: SIGUSR1 starts a new part only with rotation (--rotate, --rotate-size "
                   "or --max-size); ignored");
    else if (switch_now && !last)
        rec_say(s, "SIGUSR1: closing %s, starting the next part", rec_output_path(s->out));
    return rec_output_tick(s->out, now, !last, switch_now, err);
}

/* The shorter of a and b, 0 being no bound. */
static uint64_t shorter(uint64_t a, uint64_t b) { return a && (!b || a < b) ? a : b; }

/* How often the cut comes (rec_session_priv.h: CUT_SAMPLES): once a
 * second but where the BPF sampler's records are polled with it, at a rate
 * below CUT_SAMPLES, and no live view redraws every second; never less
 * often than --stats prints or --rotate starts a part. */
static uint64_t cut_every(const session *s, int offcpu_due, uint64_t period_ns)
{
    uint64_t second = 1000000000ULL;
    if (!offcpu_due || s->top || period_ns * CUT_SAMPLES <= second)
        return second;
    uint64_t every = shorter(period_ns * CUT_SAMPLES, CUT_MAX_NS);
    every = shorter(every, (uint64_t)(s->o->stats_interval_s * 1e9));
    every = shorter(every, (uint64_t)(s->o->rotate_seconds * 1e9));
    return every > second ? every : second;
}

/* The cut is due: on time, or riding on this wake-up (cut_ride_ns). */
static int cut_due(const session *s, uint64_t now) { return now + s->cut_ride_ns >= s->next_cut; }

/* Everything but sampling: the samples taken are written, the targets
 * that left are seen to, the new ones the scout found are seized, and at
 * a cut the counters and a zstd frame (maybe a new part) go out. Runs
 * only while no target is held that may stop soon (rec_session_priv.h:
 * HOLD_GRACE_NS, HOUSEKEEP_MAX_DELAY_NS); a stop pending meanwhile has
 * that time counted as its (b).
 * 1 when --top was told to quit. */
static int housekeep_now(session *s, uint64_t now, int last, uint64_t answers_until, zs_error *err)
{
    int cut = last || cut_due(s, now);
    /* A killed recorder loses at most what came after the last cut: an
     * unwind later than REC_UNWIND_LATE_NS does not hold its sample back
     * past one. */
    uint64_t give_up = cut && now > REC_UNWIND_LATE_NS ? now - REC_UNWIND_LATE_NS : 0;
    if (rec_pending_write(s, answers_until, give_up, err))
        return -1;
    for (size_t i = s->nslots; i-- > 0;)
        if (s->slots[i]->gone && !s->slots[i]->npending && rec_slots_release_gone(s, i, err))
            return -1;
    if (!last && s->scout && rec_slots_adopt(s, err))
        return -1;
    if (cut) {
        if (cut_tick(s, now, last, err))
            return -1;
        s->next_cut = now + s->cut_every_ns;
    }
    uint64_t every = (uint64_t)(s->o->stats_interval_s * 1e9);
    if (!last && every && now >= s->next_stats) {
        rec_report_stats(s, now);
        s->next_stats += every;
    }
    return !last && s->top && rec_top_idle(s->top, now, &s->stats);
}

/* answers_until: how long the unwinds are waited for (rec_pending_write);
 * REC_NATIVE_WAIT at the end (last). */
static int housekeep(session *s, uint64_t now, int last, uint64_t answers_until, zs_error *err)
{
    int out = interrupted(s);
    uint64_t begin = out ? rec_now_ns() : 0;
    int rc = housekeep_now(s, now, last, answers_until, err);
    if (out)
        s->elsewhere_ns += rec_now_ns() - begin;
    return rc;
}

/* Housekeeping after a BPF poll at its time: the unwinds of the captures
 * it hands over are waited for (POLL_ANSWERS_NS). */
static int housekeep_poll(session *s, uint64_t now, zs_error *err)
{
    int rc = housekeep(s, now, 0, rec_now_ns() + POLL_ANSWERS_NS, err);
    s->housekept_ns = rec_now_ns();
    return rc;
}

/* One turn of the loop when timers in the kernel make the looks' verdict
 * (rec_bpf_sampler_watched): the records are polled at their time (with
 * the cut) or at a notice, the looks run when a notice asks for
 * them, housekeeping follows the polls at their time only (the captures a
 * notice's poll took wait for it: one hand-over to the unwinder a poll),
 * and the wait is for the next of these: nothing at the rate.
 * *woke: the last wait ended at a notice. 1 at the end, -1 on an error. */
static int watch_once(session *s, rec_waiter *w, int *woke, uint64_t *next_poll,
                      uint64_t poll_every, uint64_t end, zs_error *err)
{
    uint64_t now = rec_now_ns();
    if (end && now >= end)
        return 1;
    int timed = now >= *next_poll || cut_due(s, now);
    int more = 0;
    if (timed || *woke) {
        if ((more = rec_bpf_feed_poll(s, BPF_POLL_BUDGET_NS, err)) < 0)
            return -1;
        if (timed)
            *next_poll = more ? now : now + poll_every;
    }
    *woke = more && !timed; /* a notice's poll that left records: again */
    for (size_t i = 0; i < s->nslots; i++) /* only the threads noticed: --all may sample many */
        if (s->slots[i]->due_noticed && s->slots[i]->active)
            rec_bpf_sampler_look(s, s->slots[i]);
    if (timed) {
        int rc = housekeep_poll(s, now, err);
        if (rc != 0)
            return rc;
    }
    if (more)
        return 0; /* the records the poll left, at once */
    uint64_t until = *next_poll < s->next_cut ? *next_poll : s->next_cut;
    if (end && end < until)
        until = end;
    int r = rec_waiter_wait(w, until);
    *woke = r > 0 && (r & REC_WAIT_EDGE);
    if (r > 0 && (r & REC_WAIT_SIGCHLD)) /* a launched zeek's state changed */
        collect(s);
    return 0;
}

/* Ticks on the clock; between them, sleeps until a target's stop or a
 * signal arrives, and handles it at once; housekeeping whenever no target
 * is held. */
int rec_loop_run(session *s, zs_error *err)
{
    rec_clock clock;
    /* The BPF sampler ticks in the kernel: the loop only collects its
     * records, and each wake-up of the recorder may take a CPU from zeek.
     * Often enough, though, that a poll's records fit in a target's ring
     * of pending samples (written after each poll) with room to spare. */
    double hz = s->o->rate_hz;
    /* Off-CPU samples when due: a look at the rate, jittered as the ptrace
     * sampler's ticks (no beat with zeek's own timers). Fewer looks than
     * the rate (each wake-up costs the recorder more than the look) would
     * pay the same time in fewer, heavier samples: the off-CPU shares then
     * vary more than the samples' count says (tried at 20 a second: the
     * doubles' idle share 3.4 points off their truth at 1000 Hz). Only the
     * looks at a thread found on its CPU thin out (rec_bpf_next_stride: a
     * look's busy is every thread's). */
    int offcpu_due = s->o->bpf && rec_bpf_sampler_due_hz(s);
    if (s->o->bpf && !offcpu_due) {
        double fill = s->o->rate_hz / (REC_PENDING_SAMPLES / 4);
        hz = fill > BPF_POLL_HZ ? fill : BPF_POLL_HZ;
        hz = hz < s->o->rate_hz ? hz : s->o->rate_hz;
    }
    rec_clock_init(&clock, hz, 1, rec_now_ns() ^ (uint64_t)getpid());
    s->period_ns = clock.period_ns;
    uint64_t end = s->o->duration_s > 0 ? s->start_ns + (uint64_t)(s->o->duration_s * 1e9) : 0;
    s->cut_every_ns = cut_every(s, offcpu_due, clock.period_ns);
    s->next_cut = s->start_ns + s->cut_every_ns;
    s->cut_ride_ns = offcpu_due ? CUT_RIDE_NS : 0;
    s->next_stats = s->start_ns + (uint64_t)(s->o->stats_interval_s * 1e9);

    /* Half a ring of samples is the longest housekeeping may be put off. */
    uint64_t max_delay = clock.period_ns * (REC_PENDING_SAMPLES / 2);
    if (max_delay > HOUSEKEEP_MAX_DELAY_NS)
        max_delay = HOUSEKEEP_MAX_DELAY_NS;
    s->housekept_ns = s->start_ns;
    /* When due, the records are polled with the cut, but never less often
     * than a tick nor than a quarter of a pending ring fills. */
    uint64_t poll_every = s->cut_every_ns > clock.period_ns ? s->cut_every_ns : clock.period_ns;
    if (poll_every > clock.period_ns * (REC_PENDING_SAMPLES / 4))
        poll_every = clock.period_ns * (REC_PENDING_SAMPLES / 4);
    uint64_t next_poll = s->start_ns;
    unsigned stride = 1;
    rec_waiter waiter = {-1, -1, -1};
    int watched = offcpu_due && rec_bpf_sampler_watched(s) &&
                  rec_waiter_open(&waiter, rec_bpf_sampler_notice_fd(s)) == 0;
    int woke = 0;
    while (!rec_signals_stop_requested() && (s->active || s->o->all)) {
        /* A thread added later whose timer could not be armed: the looks
         * at the rate from then on, for every thread. */
        if (watched && !rec_bpf_sampler_watched(s)) {
            rec_waiter_close(&waiter);
            watched = 0;
        }
        if (watched) {
            int rc = watch_once(s, &waiter, &woke, &next_poll, poll_every, end, err);
            if (rc < 0) {
                rec_waiter_close(&waiter);
                return -1;
            }
            if (rc > 0)
                break;
            continue;
        }
        uint64_t now = rec_now_ns(), due = s->housekept_ns + max_delay;
        uint64_t held = held_until(s, now);
        int more = 0;
        if (offcpu_due && (now >= next_poll || cut_due(s, now))) {
            /* The kernel's records, then their writing, at each poll only. */
            if ((more = rec_bpf_feed_poll(s, BPF_POLL_BUDGET_NS, err)) < 0)
                return -1;
            /* The next one at the first look a poll's time (less a period)
             * from now: polls and housekeeping wake nothing of their own,
             * each wake-up costing more than its work. */
            next_poll = more ? now : now + poll_every - clock.period_ns;
            int rc = housekeep_poll(s, now, err);
            if (rc < 0)
                return -1;
            if (rc > 0)
                break;
            now = s->housekept_ns;
        } else if (!offcpu_due && (!held || now >= due)) {
            int rc = housekeep(s, now, 0, 0, err);
            if (rc < 0)
                return -1;
            if (rc > 0)
                break;
            s->housekept_ns = now = rec_now_ns();
            held = 0;
        }
        if (more)
            continue; /* the records the poll left, at once */
        if (now < clock.deadline_ns) {
            uint64_t until = end && end < clock.deadline_ns ? end : clock.deadline_ns;
            if (held && (held < due ? held : due) < until && !offcpu_due)
                until = held < due ? held : due;
            /* The cut on time all the same: a killed recorder loses at
             * most what came since the last one. */
            if (offcpu_due && s->next_cut < until)
                until = s->next_cut;
            /* The BPF sampler traces nothing but a launched zeek: its
             * children's state changes come with a SIGCHLD. */
            if (rec_ptrace_wait(until) != 0 || !s->o->bpf)
                collect(s);
            continue;
        }
        if (end && now >= end)
            break;
        if (!s->o->bpf)
            tick(s, now);
        if (offcpu_due)
            stride = rec_bpf_next_stride(stride, rec_bpf_sampler_due(s), clock.period_ns);
        /* The kernel's records, at each turn (no system call when there are
         * none). When due they are written at the poll only, but taken here:
         * many targets' records may fill the ring before it, and no wait here
         * hears the ring ask (watch_once's does). */
        if (s->o->bpf && rec_bpf_feed_poll(s, BPF_POLL_BUDGET_NS, err) < 0)
            return -1;
        uint64_t late = rec_clock_advance(&clock, rec_now_ns());
        for (unsigned k = 1; k < stride; k++) /* looks thinned out: ticks passed over */
            rec_clock_advance(&clock, 0);
        /* A late poll loses nothing: the kernel keeps the records, and the
         * off-CPU samples when due credit the time since the last look. */
        if (!s->o->bpf) {
            s->stats.skipped += late;
            s->late_ticks += late;
        }
    }
    rec_waiter_close(&waiter);
    if (offcpu_due && rec_bpf_sampler_settle(s, err) < 0)
        return -1;
    /* Stops still out are collected by the release; their samples are not
     * kept. The BPF sampler's last records are. */
    if (s->o->bpf && rec_bpf_feed_poll(s, RELEASE_NS, err) < 0)
        return -1;
    return housekeep(s, rec_now_ns(), 1, REC_NATIVE_WAIT, err) < 0 ? -1 : 0;
}

