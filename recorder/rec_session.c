#include "rec_session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rec_clock.h"
#include "rec_cpu.h"
#include "rec_discover.h"
#include "rec_mixed.h"
#include "rec_native.h"
#include "rec_output.h"
#include "rec_ptrace.h"
#include "rec_sampler.h"
#include "rec_signals.h"
#include "rec_stats.h"
#include "rec_top.h"

static const char PROG[] = "zeek-spy-record";

enum {
    MAX_TARGETS = 1024,
    RESCAN_NS = 2000000000,       /* how often --all looks for new zeeks */
    /* A target that has not reached its stop this long after an interrupt
     * (uninterruptible sleep on a slow disk, a stopped VM) costs ticks:
     * they are skipped and counted, not credited to the late stop. */
    STOP_DEADLINE_NS = 1000000000,
    /* A target interrupted from another CPU usually stops within tens of
     * microseconds on a quiet host; sleeping meanwhile lets the recorder's
     * CPU go idle, and waking it costs as much again (idle 2-core VM, one
     * target: stop p50 84-92 us sleeping, 34-38 us spinning up to 40 us).
     * So spin that long, but not again for a while after a spin in vain:
     * on a saturated host stops take milliseconds, and spinning would only
     * take CPU from the targets. Never on the target's own CPU, where it would
     * keep the target from running at all. */
    SPIN_NS = 40000,
    SPIN_BACKOFF_TICKS = 16,
    RELEASE_NS = 1000000000,      /* to leave every target running untraced */
    EXEC_DEADLINE_NS = 10000000000LL, /* launch: from release to exec */
};

/* One target. Heap-allocated and never moved: the sampler and the output
 * keep pointers to its layout. */
typedef struct slot {
    rec_target target;
    rec_tracee tracee;
    rec_sampler *sampler;
    rec_native *native;  /* --native: its unwinder, or NULL */
    int native_taken;    /* registers and stack copied in this sample's window */
    rec_cpu cpu;
    int active;
    int refused;         /* --all: not a usable zeek; not tried again */
    double last_nettime; /* last network_time written to the recording */
    /* The blocking sample under way: interrupted for the tick at tick_ns,
     * and owed further ticks that passed before its stop came. */
    int wanted;
    uint64_t tick_ns;
    uint64_t owed;
    int warned_late;
    int pinned_cpu;      /* the one CPU it may run on, or -1; checked each second */
    uint64_t taken, credited; /* per process, for the end report */
} slot;

typedef struct session {
    const rec_options *o;
    slot **slots;
    size_t nslots;
    size_t active;
    rec_output *out;
    rec_discover *discover;
    rec_top *top;        /* --top, or NULL */
    rec_stats stats;
    uint64_t start_ns;
    uint64_t period_ns;
    cpu_set_t home;      /* the CPUs the recorder was started on */
    int follow_cpu;      /* sample each target from its own CPU */
    int spin_backoff;    /* ticks to go without spinning after a spin in vain */
    int said_demoted;
    /* Counters already written as events (the totals are in stats). */
    uint64_t skipped_written, torn_written, deep_written, failed_written, credited_written,
        late_written;
    zs_frame frames[ZS_MAX_FRAMES];
    /* --native: the unwind and the mixed stack of one sample. */
    uint64_t pcs[REC_NATIVE_MAX_FRAMES];
    rec_mixed_native natives[REC_NATIVE_MAX_FRAMES];
    zs_frame mixed[ZS_MAX_FRAMES];
    uint64_t native_samples, native_mismatched, native_failed;
} session;

static uint64_t since_start_us(const session *s, uint64_t ns)
{
    return ns > s->start_ns ? (ns - s->start_ns) / 1000 : 0;
}

static void say(const session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const session *s, const char *fmt, ...)
{
    if (s->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", PROG);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static slot *new_slot(session *s, zs_error *err)
{
    slot **more = realloc(s->slots, (s->nslots + 1) * sizeof *more);
    slot *sl = calloc(1, sizeof *sl);
    if (more)
        s->slots = more;
    if (!more || !sl) {
        free(sl);
        zs_fail(err, ZS_E_NOMEM, "targets");
        return NULL;
    }
    sl->cpu.stat_fd = -1;
    s->slots[s->nslots++] = sl;
    return sl;
}

/* The target a wait status is about: a tracee, or the launched child. */
static slot *find_slot(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && s->slots[i]->active)
            return s->slots[i];
    return NULL;
}

/* ---- Targets: found and checked first, touched only once the recording
 * is open, so that nothing that can refuse happens after a process was
 * launched or seized. */

/* Launch mode, step 1: the child waits on a pipe, not yet exec'ed, until
 * the recorder is ready; a recorder that fails or dies first closes the
 * pipe and the child exits without running the command. */
static int fork_waiting_child(session *s, slot *sl, int *go, zs_error *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return zs_fail(err, ZS_E_TARGET, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return zs_fail(err, ZS_E_TARGET, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        char c;
        close(fds[1]);
        rec_signals_reset_for_exec();
        if (read(fds[0], &c, 1) != 1)
            _exit(127);
        execvp(s->o->command[0], s->o->command);
        fprintf(stderr, "%s: cannot run %s: %s\n", PROG, s->o->command[0], strerror(errno));
        _exit(127);
    }
    close(fds[0]);
    *go = fds[1];
    sl->target.pid = pid;
    return 0;
}

/* Launch mode, step 2, with the recording open: seize the child, let it
 * exec, and inspect zeek at its first instruction. A refusal kills it
 * there, before it ran any of its code. */
static int start_child(session *s, slot *sl, int go, zs_error *err)
{
    pid_t pid = sl->target.pid;
    int rc = rec_ptrace_seize(&sl->tracee, pid, 1, err);
    if (rc == 0 && write(go, "g", 1) != 1)
        rc = zs_fail(err, ZS_E_TARGET, "cannot start %s", s->o->command[0]);
    if (rc == 0)
        rc = rec_ptrace_wait_exec(&sl->tracee, rec_now_ns() + EXEC_DEADLINE_NS, err);
    if (rc == 0)
        rc = rec_target_open(pid, &s->o->layout, &sl->target, err);
    return rc;
}

/* Opens and checks one running process without touching it. */
static int inspect(session *s, slot *sl, pid_t pid, zs_error *err)
{
    sl->target.pid = pid;
    return rec_target_open(pid, &s->o->layout, &sl->target, err) ||
                   rec_target_check(&sl->target, err)
               ? -1
               : 0;
}

/* Blocking mode seizes (nonblocking never traces). */
static int seize(session *s, slot *sl, zs_error *err)
{
    return s->o->nonblocking ? 0 : rec_ptrace_seize(&sl->tracee, sl->target.pid, 0, err);
}

/* Adds an active target to the recording, and says so. */
static int announce(session *s, slot *sl, zs_error *err)
{
    if (rec_output_add_process(s->out, &sl->target, err))
        return -1;
    say(s, "recording pid %d (%s, Zeek %s, layout from %s%s%s)", (int)sl->target.pid,
        sl->target.exe, sl->target.zeek_version, rec_layout_source_name(sl->target.layout_source),
        sl->target.node[0] ? ", node " : "", sl->target.node);
    return 0;
}

static int activate(session *s, slot *sl, zs_error *err)
{
    if (!(sl->sampler = rec_sampler_new(&sl->target, ZS_MAX_FRAMES, s->o->nonblocking)))
        return zs_fail(err, ZS_E_NOMEM, "sampler");
    if (s->o->native && !s->o->nonblocking) {
        zs_error why = {0};
        if (!(sl->native = rec_native_new(sl->target.pid, &why)))
            say(s, "warning: pid %d: no native frames: %s", (int)sl->target.pid, why.detail);
    }
    rec_cpu_open(&sl->cpu, sl->target.pid);
    sl->pinned_cpu = rec_cpu_pinned(sl->target.pid);
    sl->active = 1;
    s->active++;
    return announce(s, sl, err);
}

static int tracking_or_refused(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && (s->slots[i]->active || s->slots[i]->refused))
            return 1;
    return 0;
}

static void refuse(session *s, slot *sl, pid_t pid, const zs_error *why)
{
    sl->target.pid = pid;
    sl->refused = 1;
    say(s, "warning: skipping pid %d: %s", (int)pid, why->detail);
}

/* --all: inspects the zeek processes not seen yet. With the recording open
 * (rescans) each usable one is seized and recorded at once; before it (the
 * first scan) they are only inspected, and seized once it is open. */
static int scan(session *s, zs_error *err)
{
    pid_t pids[MAX_TARGETS];
    size_t n = rec_discover_scan(s->discover, pids, MAX_TARGETS);
    for (size_t i = 0; i < n && !rec_signals_stop_requested(); i++) {
        if (tracking_or_refused(s, pids[i]))
            continue;
        slot *sl = new_slot(s, err);
        if (!sl)
            return -1;
        zs_error why = {0};
        if (inspect(s, sl, pids[i], &why) || (s->out && seize(s, sl, &why))) {
            refuse(s, sl, pids[i], &why);
            continue;
        }
        if (!s->out) {
            sl->active = 1; /* inspected; seized and announced by start_targets */
            continue;
        }
        if (activate(s, sl, err) ||
            rec_output_event(s->out, since_start_us(s, rec_now_ns()), pids[i], ZS_EV_ATTACHED,
                             0, "", err))
            return -1;
    }
    return 0;
}

/* Before the recording is open: launch (waiting), or find and check. */
static int prepare_targets(session *s, int *go, zs_error *err)
{
    const rec_options *o = s->o;
    if (o->command) {
        slot *sl = new_slot(s, err);
        return !sl || fork_waiting_child(s, sl, go, err) ? -1 : 0;
    }
    if (o->all) {
        if (!(s->discover = rec_discover_new()))
            return zs_fail(err, ZS_E_NOMEM, "discovery");
        if (scan(s, err))
            return -1;
    } else {
        for (size_t i = 0; i < o->npids && !rec_signals_stop_requested(); i++) {
            slot *sl = new_slot(s, err);
            if (!sl)
                return -1;
            zs_error why = {0};
            if (inspect(s, sl, o->pids[i], &why)) {
                if (o->npids == 1) {
                    *err = why;
                    return -1;
                }
                /* Among several, one bad pid does not stop the others. */
                refuse(s, sl, o->pids[i], &why);
                continue;
            }
            sl->active = 1;
        }
    }
    size_t usable = 0;
    for (size_t i = 0; i < s->nslots; i++)
        usable += s->slots[i]->active;
    if (!usable && !rec_signals_stop_requested())
        return zs_fail(err, ZS_E_NO_PROCESS, o->all ? "--all: no zeek process found"
                                                      : "none of the given processes can be recorded");
    return 0;
}

/* With the recording open: start the launched child, or seize the checked
 * processes, and add each to the recording. */
static int start_targets(session *s, int go, zs_error *err)
{
    if (s->o->command) {
        slot *sl = s->slots[0];
        if (start_child(s, sl, go, err))
            return -1;
        return activate(s, sl, err);
    }
    zs_error first = {0};
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (!sl->active)
            continue;
        sl->active = 0;
        zs_error why = {0};
        if (seize(s, sl, &why)) {
            refuse(s, sl, sl->target.pid, &why);
            if (!first.code)
                first = why;
            continue;
        }
        if (activate(s, sl, err))
            return -1;
    }
    if (!s->active) {
        *err = first;
        return -1;
    }
    return 0;
}

/* ---- Sampling. */

static void raise_priority(session *s)
{
    /* The recorder must run the moment its tick fires: late, it stretches
     * the stop (blocking) or samples the target only when it yields the
     * core, biased towards idle (nonblocking: 32 % idle measured vs 20 %
     * true at nice -10, 20 % at SCHED_FIFO). RLIMIT_RTTIME bounds what a
     * runaway real-time recorder could take: SIGXCPU after 200 ms on the
     * CPU without sleeping, which drops it back to normal scheduling
     * (rec_signals.c); the hard limit is never reached. */
    if (!s->o->no_realtime) {
        struct rlimit rt = {200000, 400000};
        struct sched_param sp = {.sched_priority = 1};
        if (setrlimit(RLIMIT_RTTIME, &rt) == 0 && sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
            return;
        if (s->o->verbose)
            say(s, "note: no real-time priority (%s); using nice -10", strerror(errno));
    }
    if (setpriority(PRIO_PROCESS, 0, -10) != 0 && s->o->verbose)
        say(s, "note: cannot raise priority (%s); stop times may have a longer tail",
            strerror(errno));
}

static int target_gone(session *s, slot *sl, zs_error *err)
{
    int st = sl->tracee.wait_status;
    char msg[128];
    if (sl->tracee.state == REC_TRACEE_GONE && WIFSIGNALED(st))
        snprintf(msg, sizeof msg, "pid %d was killed by signal %d", (int)sl->target.pid, WTERMSIG(st));
    else if (sl->tracee.state == REC_TRACEE_GONE && WIFEXITED(st))
        snprintf(msg, sizeof msg, "pid %d exited with status %d", (int)sl->target.pid, WEXITSTATUS(st));
    else
        snprintf(msg, sizeof msg, "pid %d is gone", (int)sl->target.pid);
    sl->active = 0;
    sl->wanted = 0;
    s->active--;
    rec_cpu_close(&sl->cpu);
    say(s, "%s", msg);
    int rc = rec_output_event(s->out, since_start_us(s, rec_now_ns()), sl->target.pid,
                              ZS_EV_TARGET_EXITED, (uint64_t)st, msg, err);
    rec_output_drop_process(s->out, sl->target.pid);
    return rc;
}

/* --native, after the target resumed: unwinds the copied stack, names its
 * frames (each name written to the recording once) and places the script
 * frames among them. Returns the frames to write (*n their count), or NULL
 * on a write error. */
static const zs_frame *mix_native(session *s, slot *sl, size_t nscript, int cut, size_t *n,
                                  zs_error *err)
{
    int truncated;
    size_t m = rec_native_unwind(sl->native, s->pcs, REC_NATIVE_MAX_FRAMES, &truncated);
    s->native_samples++;
    if (!m) {
        s->native_failed++;
        return s->frames;
    }
    for (size_t i = 0; i < m; i++) {
        const char *name;
        int is_new;
        int64_t id = rec_native_symbol(sl->native, s->pcs[i], &name, &is_new);
        if (id < 0) {
            zs_fail(err, ZS_E_NOMEM, "native symbols");
            return NULL;
        }
        if (rec_output_symbol(s->out, sl->target.pid, (uint64_t)id, name, err))
            return NULL;
        s->natives[i] = (rec_mixed_native){(uint64_t)id, rec_mixed_is_entry(name)};
    }
    /* A script frame with a null Func would read as native: never write one. */
    for (size_t i = 0; i < nscript; i++)
        if (!s->frames[i].func)
            s->frames[i].func = 1;
    int mismatch;
    *n = rec_mixed_stack(s->frames, nscript, cut, s->natives, m, s->mixed, ZS_MAX_FRAMES, &mismatch);
    s->native_mismatched += mismatch;
    return s->mixed;
}

/* Writes the stack just read: once for its tick, and once more for each
 * tick that passed while the target waited to reach its stop. */
static int record(session *s, slot *sl, rec_read_result res, uint64_t tick_ns, uint64_t owed,
                  zs_error *err)
{
    if (res == REC_READ_TORN) {
        s->stats.torn++;
        return 0;
    }
    if (res == REC_READ_FAILED) {
        s->stats.failed++;
        return rec_target_alive(sl->target.pid) ? 0 : target_gone(s, sl, err);
    }
    int cut;
    size_t n = rec_sampler_frames(sl->sampler, s->frames, &cut);
    const zs_frame *frames = s->frames;
    if (sl->native_taken) {
        if ((frames = mix_native(s, sl, n, cut, &n, err)) == NULL)
            return -1;
        sl->native_taken = 0;
    }
    s->stats.samples++;
    s->stats.credited += owed;
    s->stats.deep += cut;
    sl->taken++;
    sl->credited += owed;
    for (uint64_t k = 0; k <= owed; k++)
        if (rec_output_sample(s->out, sl->target.pid, since_start_us(s, tick_ns + k * s->period_ns),
                              frames, n, err))
            return -1;
    return s->top ? rec_top_sample(s->top, &sl->target, s->frames, n, 1 + owed, err) : 0;
}

/* The target is in the stop its interrupt asked for: read, resume at once,
 * then write. */
static int take(session *s, slot *sl, zs_error *err)
{
    uint64_t seen = rec_now_ns();
    rec_read_result res = rec_sampler_read(sl->sampler);
    sl->native_taken = sl->native && res == REC_READ_OK && rec_native_capture(sl->native) == 0;
    rec_ptrace_resume(&sl->tracee);
    uint64_t done = rec_now_ns(), asked = sl->tracee.interrupt_ns;
    rec_hist_add(&s->stats.window, done - asked);
    rec_hist_add(&s->stats.wait, seen - asked);
    rec_hist_add(&s->stats.held, done - seen);
    sl->wanted = 0;
    return record(s, sl, res, sl->tick_ns, sl->owed, err);
}

/* Handles every state change that has arrived, from any target. */
static int collect(session *s, zs_error *err)
{
    int status;
    pid_t pid;
    while ((pid = rec_ptrace_collect(&status)) > 0) {
        slot *sl = find_slot(s, pid);
        if (!sl)
            continue;
        rec_tracee_state st = rec_ptrace_update(&sl->tracee, status);
        if (st == REC_TRACEE_GONE) {
            if (target_gone(s, sl, err))
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
            sl->owed++;
            return 0;
        }
        s->stats.skipped++;
        if (!sl->warned_late) {
            sl->warned_late = 1;
            s->stats.late_stops++;
            say(s, "warning: pid %d has not stopped 1 s after an interrupt (uninterruptible sleep?); "
                "its ticks are skipped until it does, and it keeps running",
                (int)sl->target.pid);
        }
        return 0;
    }
    sl->warned_late = 0;
    if (sl->tracee.job_stopped) {
        /* Held by job control: its stack cannot change, read it as it is. */
        return record(s, sl, rec_sampler_read(sl->sampler), tick_ns, 0, err) ? -1 : 0;
    }
    /* Where it runs: its pinned CPU, else as /proc last saw it (an idle CPU
     * may still pull it away once the recorder preempts it: a quiet 2-core
     * VM measured stop p50 14-16 us pinned, 38-50 us unpinned, 54-92 us
     * without following). */
    int cpu = sl->pinned_cpu;
    if (cpu < 0 && (follow || !s->spin_backoff))
        cpu = rec_cpu_current(&sl->cpu);
    if (follow)
        rec_cpu_move_self(cpu, &s->home);
    rec_sampler_warm(sl->sampler);
    if (rec_ptrace_interrupt(&sl->tracee, rec_now_ns()))
        return 0; /* gone: its exit status is collected next */
    sl->wanted = 1;
    sl->tick_ns = tick_ns;
    sl->owed = 0;
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
    int follow = s->follow_cpu && s->active == 1;
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (!sl->active)
            continue;
        int rc = s->o->nonblocking ? record(s, sl, rec_sampler_read(sl->sampler), tick_ns, 0, err)
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
    say(s,
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
    uint64_t t = since_start_us(s, now);
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
        say(s, "note: the real-time CPU budget ran out (every tick late); "
            "continuing at normal priority");
    }
    return rec_output_tick(s->out, now, !last, err);
}

/* Ticks on the clock; between them, sleeps until a target's stop or a
 * signal arrives, and handles it at once. */
static int sample_loop(session *s, zs_error *err)
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
            if (collect(s, err))
                return -1;
            continue;
        }
        if (end && now >= end)
            break;
        if (tick(s, now, err))
            return -1;
        s->stats.skipped += rec_clock_advance(&clock, rec_now_ns());
        if (now >= next_second) {
            if (second_tick(s, now, 0, err))
                return -1;
            next_second = now + 1000000000ULL;
        }
        if (s->o->all && now >= next_scan) {
            if (scan(s, err))
                return -1;
            next_scan = now + RESCAN_NS;
        }
        if (stats_every && now >= next_stats) {
            print_stats(s, now);
            next_stats += stats_every;
        }
    }
    return second_tick(s, rec_now_ns(), 1, err);
}

static void report_end(const session *s)
{
    double secs = (double)(rec_now_ns() - s->start_ns) / 1e9;
    const rec_stats *st = &s->stats;
    uint64_t bytes = rec_output_bytes(s->out), calls = 0, written = st->samples + st->credited;
    unsigned parts = rec_output_parts(s->out);
    for (size_t i = 0; i < s->nslots; i++)
        calls += s->slots[i]->sampler ? rec_sampler_calls(s->slots[i]->sampler) : 0;
    if (parts > 1)
        say(s, "wrote %u parts, the last %s: %" PRIu64 " samples in %.1f s, %.1f KiB (%.2f B/sample)",
            parts, rec_output_path(s->out), written, secs, bytes / 1024.0,
            written ? (double)bytes / (double)written : 0);
    else
        say(s, "wrote %s: %" PRIu64 " samples in %.1f s, %zu distinct stacks, %.1f KiB (%.2f B/sample)",
            rec_output_path(s->out), written, secs, rec_output_stacks(s->out), bytes / 1024.0,
            written ? (double)bytes / (double)written : 0);
    size_t sampled = 0;
    for (size_t i = 0; i < s->nslots; i++)
        sampled += s->slots[i]->taken > 0;
    double target_secs = secs * (double)(sampled ? sampled : 1);
    if (!s->o->nonblocking && st->samples) {
        say(s, "stop time per sample: p50 %.0f us, p99 %.0f us, max %.0f us; target overhead %.2f %% "
            "at most, %.2f %% held for certain; %.2f reads/sample",
            rec_hist_quantile_us(&st->window, 0.5), rec_hist_quantile_us(&st->window, 0.99),
            st->window.max_ns / 1e3, 100.0 * (double)st->window.total_ns / 1e9 / target_secs,
            100.0 * (double)st->held.total_ns / 1e9 / target_secs, (double)calls / (double)st->samples);
        say(s, "of which waiting for the stop: p50 %.0f us, p99 %.0f us (on a busy host mostly the "
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
                say(s, "note: pid %d may run on any CPU, so its stops pay cross-CPU wake-ups; "
                    "pinned (e.g. pin_cpus in zeekctl's node.cfg) they take about 15 us",
                    (int)s->slots[i]->target.pid);
    }
    if (st->credited)
        say(s, "%" PRIu64 " of %" PRIu64 " samples (%.1f %%) stand for ticks that passed while a "
            "target was on its way to its stop (waiting for a core on a busy host, or in an "
            "uninterruptible wait); its stack could not change meanwhile, so the shares stay right",
            st->credited, written, 100.0 * (double)st->credited / (double)written);
    for (size_t i = 0; i < s->nslots && (s->nslots > 1 || st->credited); i++) {
        const slot *sl = s->slots[i];
        if (sl->taken)
            say(s, "pid %d: %" PRIu64 " samples (%.1f Hz), %" PRIu64 " of them credited",
                (int)sl->target.pid, sl->taken + sl->credited,
                secs > 0 ? (double)(sl->taken + sl->credited) / secs : 0, sl->credited);
    }
    if (s->native_samples) {
        uint64_t truncated = 0;
        for (size_t i = 0; i < s->nslots; i++)
            truncated += s->slots[i]->native ? rec_native_truncated(s->slots[i]->native) : 0;
        say(s, "native frames: %" PRIu64 " stacks unwound; %" PRIu64 " unwinds failed, %" PRIu64
            " did not match the script frames (kept as script frames and the native leaf), %" PRIu64
            " deeper than the %d KiB stack copy (outermost frames missing)",
            s->native_samples, s->native_failed, s->native_mismatched, truncated,
            REC_NATIVE_STACK_BYTES >> 10);
    }
    if (st->skipped)
        say(s, "%" PRIu64 " sampling ticks were skipped (recorder late, or a target that did not stop)",
            st->skipped);
    if (st->torn)
        say(s, "%" PRIu64 " torn reads discarded (nonblocking)", st->torn);
}

static void owner_from_sudo(rec_output_config *c)
{
    const char *uid = getenv("SUDO_UID"), *gid = getenv("SUDO_GID");
    c->uid = (uid_t)-1;
    c->gid = (gid_t)-1;
    if (uid && gid && geteuid() == 0) { /* files belong to the invoking user */
        c->uid = (uid_t)strtoul(uid, NULL, 10);
        c->gid = (gid_t)strtoul(gid, NULL, 10);
    }
}

/* Whatever happened, every target runs on, untraced; a launched child that
 * never started the command for real is ended first, in its exec stop,
 * before it ran any of its own code. */
static void release_targets(session *s, int go)
{
    if (go >= 0)
        close(go); /* a child still waiting there exits without exec */
    slot *child = s->o->command && s->nslots ? s->slots[0] : NULL;
    if (child && child->target.pid && !child->active) {
        kill(child->target.pid, SIGKILL);
        waitpid(child->target.pid, NULL, __WALL);
        child->tracee.state = REC_TRACEE_GONE;
    }
    rec_tracee *tracees[MAX_TARGETS];
    size_t n = 0;
    for (size_t i = 0; i < s->nslots && n < MAX_TARGETS; i++)
        if (s->slots[i]->tracee.seized)
            tracees[n++] = &s->slots[i]->tracee;
    size_t stuck = rec_ptrace_release(tracees, n, rec_now_ns() + RELEASE_NS);
    if (stuck)
        fprintf(stderr, "%s: %zu target%s did not stop within 1 s to be detached; the kernel "
                "releases %s as the recorder exits\n", PROG, stuck, stuck == 1 ? "" : "s",
                stuck == 1 ? "it" : "them");
}

int rec_session_run(const rec_options *o, zs_error *err)
{
    session s = {.o = o};
    int rc = -1, go = -1;
    sched_getaffinity(0, sizeof s.home, &s.home);
    s.follow_cpu = !o->nonblocking && !o->no_follow_cpu;
    if (prepare_targets(&s, &go, err) || rec_signals_stop_requested())
        goto out;
    if (o->top && !(s.top = rec_top_new(o->top_window_s, !o->output, o->quiet, err)))
        goto out;
    rec_output_config oc = {
        .path = o->output ? o->output : rec_top_scratch_path(s.top), .rate_hz = o->rate_hz, .nonblocking = o->nonblocking,
        .rotate_bytes = o->rotate_bytes, .rotate_seconds = o->rotate_seconds,
        .max_bytes = o->max_bytes,
    };
    owner_from_sudo(&oc);
    s.start_ns = rec_now_ns();
    pid_t first = 0;
    for (size_t i = 0; i < s.nslots && !first; i++)
        first = s.slots[i]->active || o->command ? s.slots[i]->target.pid : 0;
    if (!(s.out = rec_output_open(&oc, s.start_ns, first, err)))
        goto out;
    if (start_targets(&s, go, err))
        goto out;
    close(go);
    go = -1;
    if (rec_signals_stop_requested()) {
        rc = 0; /* before the first sample: a valid, empty recording */
        goto out;
    }
    say(&s, "sampling %zu process%s at %g Hz into %s", s.active, s.active == 1 ? "" : "es",
        o->rate_hz, rec_output_path(s.out));
    if (rec_output_tick(s.out, rec_now_ns(), 0, err))
        goto out;
    raise_priority(&s);
    if (s.top)
        rec_top_begin(s.top, s.start_ns);
    if (o->command && o->nonblocking) {
        /* Traced only to catch its exec: let it go for good. */
        rec_tracee *child = &s.slots[0]->tracee;
        rec_ptrace_release(&child, 1, rec_now_ns() + RELEASE_NS);
    } else if (o->command) {
        rec_ptrace_resume(&s.slots[0]->tracee);
    }
    if (sample_loop(&s, err))
        goto out;
    if (rec_signals_stop_requested())
        say(&s, "stopping on signal %d", rec_signals_stop_requested());
    rc = 0;
out:
    /* Targets first: whatever else failed, they must run on untraced. */
    release_targets(&s, go);
    rec_top_end(s.top); /* the terminal back before anything is said */
    if (s.out && rc == 0) {
        report_end(&s);
        rc = rec_output_close(s.out, since_start_us(&s, rec_now_ns()), err);
    } else if (s.out) {
        if (rec_output_bytes(s.out))
            fprintf(stderr, "%s: what was recorded before the error stays valid in %s\n", PROG,
                    rec_output_path(s.out));
        rec_output_abandon(s.out);
    }
    if (rc && rec_signals_stop_requested() && !s.active) {
        /* Start-up failed because it was told to stop: not an error. */
        say(&s, "stopped on signal %d before recording started", rec_signals_stop_requested());
        rc = 0;
    }
    for (size_t i = 0; i < s.nslots; i++) {
        rec_sampler_free(s.slots[i]->sampler);
        rec_native_free(s.slots[i]->native);
        rec_cpu_close(&s.slots[i]->cpu);
        free(s.slots[i]);
    }
    free(s.slots);
    rec_discover_free(s.discover);
    rec_top_free(s.top); /* after the output is closed: removes a scratch recording */
    return rc;
}
