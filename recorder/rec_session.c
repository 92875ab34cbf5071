#include "rec_session.h"

#include <errno.h>
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
#include "rec_discover.h"
#include "rec_output.h"
#include "rec_ptrace.h"
#include "rec_sampler.h"
#include "rec_stats.h"

static const char PROG[] = "zeek-spy-record";

/* How often --all looks for zeek processes that started since. */
enum { RESCAN_NS = 2000000000, MAX_TARGETS = 1024 };

/* Async-signal state: a C program truly needs this much global state. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) { stop_requested = sig; }
static void on_child(int sig) { (void)sig; /* only wakes clock_nanosleep */ }

void rec_session_install_signals(void)
{
    struct sigaction sa = {0};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal; /* no SA_RESTART: interrupt the sleep */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_child;
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* One target. Heap-allocated and never moved: the sampler and the output
 * keep pointers to its layout. */
typedef struct slot {
    rec_target target;
    rec_tracee tracee;
    rec_sampler *sampler;
    int active;
    int refused;         /* --all: not a usable zeek; not tried again */
    double last_nettime; /* last network_time written to the recording */
} slot;

typedef struct session {
    const rec_options *o;
    slot **slots;
    size_t nslots;
    size_t active;
    rec_output *out;
    rec_discover *discover;
    rec_stats stats;
    uint64_t start_ns;
    /* Counters already written as events (the totals are in stats). */
    uint64_t skipped_written, torn_written, deep_written, failed_written;
    zs_frame frames[ZS_MAX_FRAMES];
} session;

static uint64_t since_start_us(const session *s, uint64_t ns) { return (ns - s->start_ns) / 1000; }

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
    s->slots[s->nslots++] = sl;
    return sl;
}

/* Launch mode: the child waits on a pipe until it is seized, so the
 * recorder sees its exec and samples from the first instruction of zeek. */
static int launch(session *s, slot *sl, zs_error *err)
{
    int go[2];
    if (pipe(go) != 0)
        return zs_fail(err, ZS_E_TARGET, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        return zs_fail(err, ZS_E_TARGET, "fork: %s", strerror(errno));
    if (pid == 0) {
        char c;
        close(go[1]);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        if (read(go[0], &c, 1) != 1)
            _exit(127);
        execvp(s->o->command[0], s->o->command);
        fprintf(stderr, "%s: cannot run %s: %s\n", PROG, s->o->command[0], strerror(errno));
        _exit(127);
    }
    close(go[0]);
    int rc = rec_ptrace_seize(&sl->tracee, pid, 1, err);
    if (rc == 0 && write(go[1], "g", 1) != 1)
        rc = zs_fail(err, ZS_E_TARGET, "cannot start %s", s->o->command[0]);
    close(go[1]);
    if (rc == 0)
        rc = rec_ptrace_wait_exec(&sl->tracee, err);
    if (rc == 0)
        rc = rec_target_open(pid, &s->o->layout, &sl->target, err);
    if (rc) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        sl->tracee.seized = 0;
        return -1;
    }
    return 0;
}

/* Opens, checks and (blocking mode) seizes one running process. Everything
 * that can refuse happens before the process is touched. */
static int attach(session *s, slot *sl, pid_t pid, zs_error *err)
{
    if (rec_target_open(pid, &s->o->layout, &sl->target, err) || rec_target_check(&sl->target, err))
        return -1;
    if (!s->o->nonblocking && rec_ptrace_seize(&sl->tracee, pid, 0, err))
        return -1;
    return 0;
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
    sl->active = 1;
    s->active++;
    return s->out ? announce(s, sl, err) : 0;
}

static int tracking(const session *s, pid_t pid)
{
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->target.pid == pid && s->slots[i]->active)
            return 1;
    return 0;
}

/* --all: picks up zeek processes that are not recorded yet. A process that
 * refuses (a wrong layout, gone meanwhile) is skipped with a warning. */
static int rescan(session *s, zs_error *err)
{
    pid_t pids[MAX_TARGETS];
    size_t n = rec_discover_scan(s->discover, pids, MAX_TARGETS);
    for (size_t i = 0; i < n; i++) {
        if (tracking(s, pids[i]))
            continue;
        int refused = 0;
        for (size_t k = 0; k < s->nslots && !refused; k++)
            refused = s->slots[k]->refused && s->slots[k]->target.pid == pids[i];
        if (refused)
            continue;
        slot *sl = new_slot(s, err);
        if (!sl)
            return -1;
        zs_error why = {0};
        if (attach(s, sl, pids[i], &why)) {
            sl->target.pid = pids[i];
            sl->refused = 1;
            say(s, "warning: skipping pid %d: %s", (int)pids[i], why.detail);
            continue;
        }
        if (activate(s, sl, err) ||
            (s->out && rec_output_event(s->out, since_start_us(s, rec_now_ns()), pids[i],
                                        ZS_EV_ATTACHED, 0, "", err)))
            return -1;
    }
    return 0;
}

static int open_targets(session *s, zs_error *err)
{
    const rec_options *o = s->o;
    if (o->command) {
        slot *sl = new_slot(s, err);
        return !sl || launch(s, sl, err) || activate(s, sl, err) ? -1 : 0;
    }
    if (o->all) {
        if (!(s->discover = rec_discover_new()))
            return zs_fail(err, ZS_E_NOMEM, "discovery");
        if (rescan(s, err))
            return -1;
        if (!s->active)
            return zs_fail(err, ZS_E_NO_PROCESS, "--all: no zeek process found");
        return 0;
    }
    zs_error first = {0};
    for (size_t i = 0; i < o->npids; i++) {
        slot *sl = new_slot(s, err);
        if (!sl)
            return -1;
        zs_error why = {0};
        if (attach(s, sl, o->pids[i], &why)) {
            if (o->npids == 1) {
                *err = why;
                return -1;
            }
            /* Among several, one bad pid does not stop the others. */
            say(s, "warning: skipping pid %d: %s", (int)o->pids[i], why.detail);
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

static void raise_priority(const session *s)
{
    /* The recorder must run the moment its tick fires: late, it stretches
     * the stop (blocking) or samples the target only when it yields the
     * core, biased towards idle (nonblocking: 32 % idle measured vs 20 %
     * true at nice -10, 20 % at SCHED_FIFO). RLIMIT_RTTIME bounds what a
     * runaway real-time recorder could take: SIGXCPU after 200 ms on the
     * CPU without sleeping. */
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
    if (sl->tracee.gone && WIFSIGNALED(st))
        snprintf(msg, sizeof msg, "pid %d was killed by signal %d", (int)sl->target.pid, WTERMSIG(st));
    else if (sl->tracee.gone && WIFEXITED(st))
        snprintf(msg, sizeof msg, "pid %d exited with status %d", (int)sl->target.pid, WEXITSTATUS(st));
    else
        snprintf(msg, sizeof msg, "pid %d is gone", (int)sl->target.pid);
    sl->active = 0;
    s->active--;
    say(s, "%s", msg);
    int rc = rec_output_event(s->out, since_start_us(s, rec_now_ns()), sl->target.pid,
                              ZS_EV_TARGET_EXITED, (uint64_t)st, msg, err);
    rec_output_drop_process(s->out, sl->target.pid);
    return rc;
}

static int sample_one(session *s, slot *sl, zs_error *err)
{
    if (!s->o->nonblocking)
        rec_sampler_warm(sl->sampler);
    uint64_t t0 = rec_now_ns();
    if (!s->o->nonblocking) {
        int rc = rec_ptrace_stop(&sl->tracee, err);
        if (rc)
            return rc < 0 ? -1 : target_gone(s, sl, err);
    }
    rec_read_result res = rec_sampler_read(sl->sampler);
    if (!s->o->nonblocking) {
        rec_ptrace_resume(&sl->tracee);
        rec_stats_stop(&s->stats, rec_now_ns() - t0);
    }
    /* Everything below runs with the target going again. */
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
    s->stats.samples++;
    s->stats.deep += cut;
    return rec_output_sample(s->out, sl->target.pid, since_start_us(s, t0), s->frames, n, err);
}

static void print_stats(const session *s, uint64_t now)
{
    double elapsed = (double)(now - s->start_ns) / 1e9;
    uint64_t bytes = rec_output_bytes(s->out);
    say(s,
        "%.1f s, %" PRIu64 " samples, %" PRIu64 " skipped, %.1f Hz, stop p50 %.0f us p99 %.0f us, "
        "overhead %.2f %%, %.1f KiB written, %.2f B/sample",
        elapsed, s->stats.samples, s->stats.skipped, elapsed > 0 ? s->stats.samples / elapsed : 0,
        rec_stats_quantile_us(&s->stats, 0.5), rec_stats_quantile_us(&s->stats, 0.99),
        elapsed > 0 ? 100.0 * (double)s->stats.stop_ns_total / 1e9 / elapsed : 0, bytes / 1024.0,
        s->stats.samples ? (double)bytes / (double)s->stats.samples : 0);
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
        write_count(s, t, ZS_EV_SAMPLE_FAILED, s->stats.failed, &s->failed_written, err))
        return -1;
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        double nt = sl->sampler ? rec_sampler_network_time(sl->sampler) : 0;
        if (sl->active && nt != sl->last_nettime &&
            rec_output_nettime(s->out, t, sl->target.pid, nt, err))
            return -1;
        sl->last_nettime = nt;
    }
    return rec_output_tick(s->out, now, !last, err);
}

static int sample_loop(session *s, zs_error *err)
{
    rec_clock clock;
    rec_clock_init(&clock, s->o->rate_hz, 1, rec_now_ns() ^ (uint64_t)getpid());
    uint64_t end = s->o->duration_s > 0 ? s->start_ns + (uint64_t)(s->o->duration_s * 1e9) : 0;
    uint64_t next_second = s->start_ns + 1000000000ULL, next_scan = s->start_ns + RESCAN_NS;
    uint64_t stats_every = (uint64_t)(s->o->stats_interval_s * 1e9);
    uint64_t next_stats = s->start_ns + stats_every;

    while (!stop_requested && (s->active || s->o->all)) {
        int woken = rec_clock_wait(&clock);
        for (size_t i = 0; i < s->nslots; i++) {
            slot *sl = s->slots[i];
            if (sl->active && !s->o->nonblocking && rec_ptrace_poll(&sl->tracee) &&
                target_gone(s, sl, err))
                return -1;
        }
        if (woken)
            continue;
        uint64_t now = rec_now_ns();
        if (end && now >= end)
            break;
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i]->active && sample_one(s, s->slots[i], err))
                return -1;
        uint64_t skipped = rec_clock_advance(&clock, rec_now_ns());
        s->stats.skipped += skipped;
        if (now >= next_second) {
            if (second_tick(s, now, 0, err))
                return -1;
            next_second = now + 1000000000ULL;
        }
        if (s->o->all && now >= next_scan) {
            if (rescan(s, err))
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
    uint64_t bytes = rec_output_bytes(s->out), calls = 0;
    unsigned parts = rec_output_parts(s->out);
    for (size_t i = 0; i < s->nslots; i++)
        calls += s->slots[i]->sampler ? rec_sampler_calls(s->slots[i]->sampler) : 0;
    if (parts > 1)
        say(s, "wrote %u parts, the last %s: %" PRIu64 " samples in %.1f s, %.1f KiB (%.2f B/sample)",
            parts, rec_output_path(s->out), s->stats.samples, secs, bytes / 1024.0,
            s->stats.samples ? (double)bytes / (double)s->stats.samples : 0);
    else
        say(s, "wrote %s: %" PRIu64 " samples in %.1f s, %zu distinct stacks, %.1f KiB (%.2f B/sample)",
            rec_output_path(s->out), s->stats.samples, secs, rec_output_stacks(s->out),
            bytes / 1024.0, s->stats.samples ? (double)bytes / (double)s->stats.samples : 0);
    if (!s->o->nonblocking && s->stats.samples)
        say(s, "stop time per sample: p50 %.0f us, p99 %.0f us, max %.0f us; target overhead %.2f %%; "
            "%.2f reads/sample",
            rec_stats_quantile_us(&s->stats, 0.5), rec_stats_quantile_us(&s->stats, 0.99),
            s->stats.stop_max_ns / 1e3,
            secs > 0 ? 100.0 * (double)s->stats.stop_ns_total / 1e9 / secs : 0,
            (double)calls / (double)s->stats.samples);
    if (s->stats.skipped)
        say(s, "%" PRIu64 " sampling ticks were skipped (recorder late)", s->stats.skipped);
    if (s->stats.torn)
        say(s, "%" PRIu64 " torn reads discarded (nonblocking)", s->stats.torn);
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

int rec_session_run(const rec_options *o, zs_error *err)
{
    session s = {.o = o};
    int rc = -1;
    if (open_targets(&s, err))
        goto out;
    rec_output_config oc = {
        .path = o->output, .rate_hz = o->rate_hz, .nonblocking = o->nonblocking,
        .rotate_bytes = o->rotate_bytes, .rotate_seconds = o->rotate_seconds,
        .max_bytes = o->max_bytes,
    };
    owner_from_sudo(&oc);
    s.start_ns = rec_now_ns();
    pid_t first = s.nslots ? s.slots[0]->target.pid : 0;
    if (!(s.out = rec_output_open(&oc, s.start_ns, first, err)))
        goto out;
    for (size_t i = 0; i < s.nslots; i++)
        if (s.slots[i]->active && announce(&s, s.slots[i], err))
            goto out;
    say(&s, "sampling %zu process%s at %g Hz into %s", s.active, s.active == 1 ? "" : "es",
        o->rate_hz, rec_output_path(s.out));
    if (rec_output_tick(s.out, rec_now_ns(), 0, err))
        goto out;
    raise_priority(&s);
    if (o->command)
        rec_ptrace_resume(&s.slots[0]->tracee);
    if (sample_loop(&s, err))
        goto out;
    if (stop_requested)
        say(&s, "stopping on signal %d", (int)stop_requested);
    rc = 0;
out:
    /* Targets first: whatever else failed, they must run on untraced. */
    for (size_t i = 0; i < s.nslots; i++)
        rec_ptrace_detach(&s.slots[i]->tracee);
    if (s.out && rc == 0) {
        report_end(&s);
        rc = rec_output_close(s.out, s.stats.skipped, since_start_us(&s, rec_now_ns()), err);
    } else if (s.out) {
        fprintf(stderr, "%s: what was recorded before the error stays valid in %s\n", PROG,
                rec_output_path(s.out));
        rec_output_abandon(s.out);
    } else if (o->command && s.nslots && s.slots[0]->target.pid) {
        kill(s.slots[0]->target.pid, SIGKILL); /* launched, never started for real */
        waitpid(s.slots[0]->target.pid, NULL, 0);
    }
    for (size_t i = 0; i < s.nslots; i++) {
        rec_sampler_free(s.slots[i]->sampler);
        free(s.slots[i]);
    }
    free(s.slots);
    rec_discover_free(s.discover);
    return rc;
}
