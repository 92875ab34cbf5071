#include "rec_session.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rec_capture.h"
#include "rec_clock.h"
#include "rec_ptrace.h"
#include "rec_sampler.h"
#include "rec_stacks.h"
#include "rec_stats.h"
#include "zs_version.h"
#include "zs_writer.h"

static const char PROG[] = "zeek-spy-record";

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

typedef struct slot {
    rec_target target;
    rec_tracee tracee;
    rec_sampler *sampler;
    rec_capture *capture;
    int active;
} slot;

typedef struct session {
    const rec_options *o;
    slot *slots;
    size_t nslots;
    size_t active;
    zs_writer *writer;
    rec_stacks *stacks;
    rec_stats stats;
    uint64_t start_ns;
    uint64_t pending_skipped;
    zs_frame frames[ZS_MAX_FRAMES];
    uint64_t deep_stacks;
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

/* Launch mode: the child waits on a pipe until it is seized, so the
 * recorder sees its exec and samples from the first instruction of zeek. */
static int launch(session *s, pid_t *child, zs_error *err)
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
    slot *sl = &s->slots[0];
    int rc = rec_ptrace_seize(&sl->tracee, pid, 1, err);
    if (rc == 0 && write(go[1], "g", 1) != 1)
        rc = zs_fail(err, ZS_E_TARGET, "cannot start %s", s->o->command[0]);
    close(go[1]);
    if (rc == 0)
        rc = rec_ptrace_wait_exec(&sl->tracee, err);
    if (rc) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    *child = pid;
    return 0;
}

static void default_output(const session *s, char *buf, size_t size)
{
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
    snprintf(buf, size, "zeek-spy-%s-%d-%s.zspy", host, (int)s->slots[0].target.pid, when);
}

static int write_header(session *s, zs_error *err)
{
    char host[256] = "", wall[32], mono[32], rate[32], id[33];
    uint8_t rnd[16] = {0};
    struct timespec ts;
    gethostname(host, sizeof host - 1);
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(wall, sizeof wall, "%lld", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    snprintf(mono, sizeof mono, "%" PRIu64, s->start_ns);
    snprintf(rate, sizeof rate, "%g", s->o->rate_hz);
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
        memcpy(rnd, &ts, sizeof ts < sizeof rnd ? sizeof ts : sizeof rnd);
    for (int i = 0; i < 16; i++)
        snprintf(id + 2 * i, 3, "%02x", rnd[i]);
    zs_kv kv[] = {
        {"recorder_version", ZS_RECORDER_VERSION}, {"host", host},
        {"start_wall_ns", wall},                   {"start_mono_ns", mono},
        {"rate_hz", rate},                         {"recording_id", id},
        {"mode", s->o->nonblocking ? "nonblocking" : "ptrace"},
    };
    return zs_writer_header(s->writer, kv, sizeof kv / sizeof kv[0], err);
}

static int write_process(session *s, const rec_target *t, zs_error *err)
{
    char ns_pid[16];
    char *layout = zs_layout_format(&t->layout);
    if (!layout)
        return zs_fail(err, ZS_E_NOMEM, "layout text");
    snprintf(ns_pid, sizeof ns_pid, "%d", (int)t->ns_pid);
    zs_kv kv[] = {
        {"exe", t->exe}, {"build_id", t->build_id}, {"zeek_version", t->zeek_version},
        {"layout", layout}, {"layout_source", rec_layout_source_name(t->layout_source)},
        {"ns_pid", ns_pid}, {"node", t->node},
    };
    int rc = zs_writer_process(s->writer, (uint32_t)t->pid, kv, sizeof kv / sizeof kv[0], err);
    free(layout);
    return rc;
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

static void target_gone(session *s, slot *sl)
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
    zs_error ignored;
    zs_writer_event(s->writer, since_start_us(s, rec_now_ns()), (uint32_t)sl->target.pid,
                    ZS_EV_TARGET_EXITED, (uint64_t)st, msg, &ignored);
}

static int sample_one(session *s, slot *sl, zs_error *err)
{
    if (!s->o->nonblocking)
        rec_sampler_warm(sl->sampler);
    uint64_t t0 = rec_now_ns();
    if (!s->o->nonblocking) {
        int rc = rec_ptrace_stop(&sl->tracee, err);
        if (rc) {
            if (rc > 0)
                target_gone(s, sl);
            return rc < 0 ? -1 : 0;
        }
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
        if (!rec_target_alive(sl->target.pid))
            target_gone(s, sl);
        return 0;
    }
    int cut, is_new;
    size_t n = rec_sampler_frames(sl->sampler, s->frames, &cut);
    s->deep_stacks += cut;
    int64_t id = rec_stacks_intern(s->stacks, (uint32_t)sl->target.pid, s->frames, n, &is_new);
    if (id < 0)
        return zs_fail(err, ZS_E_NOMEM, "stack table");
    if (is_new && (rec_capture_frames(sl->capture, s->frames, n, err) ||
                   zs_writer_stack(s->writer, (uint64_t)id, (uint32_t)sl->target.pid, s->frames, n, err)))
        return -1;
    s->stats.samples++;
    return zs_writer_sample(s->writer, since_start_us(s, t0), (uint64_t)id, err);
}

static void print_stats(const session *s, uint64_t now)
{
    double elapsed = (double)(now - s->start_ns) / 1e9;
    uint64_t bytes = zs_writer_bytes_written(s->writer);
    say(s,
        "%.1f s, %" PRIu64 " samples, %" PRIu64 " skipped, %.1f Hz, stop p50 %.0f us p99 %.0f us, "
        "overhead %.2f %%, %.1f KiB written, %.2f B/sample",
        elapsed, s->stats.samples, s->stats.skipped, elapsed > 0 ? s->stats.samples / elapsed : 0,
        rec_stats_quantile_us(&s->stats, 0.5), rec_stats_quantile_us(&s->stats, 0.99),
        elapsed > 0 ? 100.0 * (double)s->stats.stop_ns_total / 1e9 / elapsed : 0, bytes / 1024.0,
        s->stats.samples ? (double)bytes / (double)s->stats.samples : 0);
    if (s->o->nonblocking && s->stats.torn)
        say(s, "%" PRIu64 " torn reads discarded", s->stats.torn);
}

/* Once a second: account skipped ticks and torn reads, and cut a zstd frame
 * so a killed recorder loses at most this second. */
static int second_tick(session *s, uint64_t now, uint64_t *torn_written, zs_error *err)
{
    uint64_t t = since_start_us(s, now);
    if (s->pending_skipped) {
        if (zs_writer_event(s->writer, t, 0, ZS_EV_SKIPPED, s->pending_skipped, "", err))
            return -1;
        s->pending_skipped = 0;
    }
    if (s->stats.torn > *torn_written) {
        if (zs_writer_event(s->writer, t, 0, ZS_EV_TORN, s->stats.torn - *torn_written, "", err))
            return -1;
        *torn_written = s->stats.torn;
    }
    return zs_writer_flush(s->writer, err);
}

static int sample_loop(session *s, zs_error *err)
{
    rec_clock clock;
    uint64_t seed = rec_now_ns() ^ (uint64_t)getpid();
    rec_clock_init(&clock, s->o->rate_hz, 1, seed);
    uint64_t end = s->o->duration_s > 0 ? s->start_ns + (uint64_t)(s->o->duration_s * 1e9) : 0;
    uint64_t next_flush = s->start_ns + 1000000000ULL, torn_written = 0;
    uint64_t stats_every = (uint64_t)(s->o->stats_interval_s * 1e9);
    uint64_t next_stats = s->start_ns + stats_every;

    while (!stop_requested && s->active) {
        int woken = rec_clock_wait(&clock);
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i].active && !s->o->nonblocking && rec_ptrace_poll(&s->slots[i].tracee))
                target_gone(s, &s->slots[i]);
        if (woken)
            continue;
        uint64_t now = rec_now_ns();
        if (end && now >= end)
            break;
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i].active && sample_one(s, &s->slots[i], err))
                return -1;
        uint64_t skipped = rec_clock_advance(&clock, rec_now_ns());
        s->stats.skipped += skipped;
        s->pending_skipped += skipped;
        if (now >= next_flush) {
            if (second_tick(s, now, &torn_written, err))
                return -1;
            next_flush = now + 1000000000ULL;
        }
        if (stats_every && now >= next_stats) {
            print_stats(s, now);
            next_stats += stats_every;
        }
    }
    return second_tick(s, rec_now_ns(), &torn_written, err);
}

static int open_targets(session *s, pid_t *launched, zs_error *err)
{
    const rec_options *o = s->o;
    s->nslots = o->command ? 1 : o->npids;
    s->slots = calloc(s->nslots, sizeof *s->slots);
    if (!s->slots)
        return zs_fail(err, ZS_E_NOMEM, "targets");
    if (o->command && launch(s, launched, err))
        return -1;
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = &s->slots[i];
        pid_t pid = o->command ? *launched : o->pids[i];
        /* Everything that can refuse happens before the target is touched. */
        if (rec_target_open(pid, &o->layout, &sl->target, err) || rec_target_check(&sl->target, err))
            return -1;
    }
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = &s->slots[i];
        if (!o->command && !o->nonblocking && rec_ptrace_seize(&sl->tracee, sl->target.pid, 0, err))
            return -1;
        sl->sampler = rec_sampler_new(&sl->target, ZS_MAX_FRAMES, o->nonblocking);
        if (!sl->sampler)
            return zs_fail(err, ZS_E_NOMEM, "sampler");
        sl->active = 1;
        s->active++;
    }
    return 0;
}

static void report_end(const session *s, const char *path)
{
    uint64_t now = rec_now_ns();
    double secs = (double)(now - s->start_ns) / 1e9;
    uint64_t bytes = zs_writer_bytes_written(s->writer);
    say(s, "wrote %s: %" PRIu64 " samples in %.1f s, %zu distinct stacks, %.1f KiB (%.2f B/sample)",
        path, s->stats.samples, secs, rec_stacks_count(s->stacks), bytes / 1024.0,
        s->stats.samples ? (double)bytes / (double)s->stats.samples : 0);
    uint64_t calls = 0;
    for (size_t i = 0; i < s->nslots; i++)
        calls += s->slots[i].sampler ? rec_sampler_calls(s->slots[i].sampler) : 0;
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

int rec_session_run(const rec_options *o, zs_error *err)
{
    session s = {.o = o};
    pid_t launched = 0;
    char path[512];
    int rc = -1;
    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    const char *sudo_uid = getenv("SUDO_UID"), *sudo_gid = getenv("SUDO_GID");
    if (sudo_uid && sudo_gid && geteuid() == 0) { /* files belong to the invoking user */
        uid = (uid_t)strtoul(sudo_uid, NULL, 10);
        gid = (gid_t)strtoul(sudo_gid, NULL, 10);
    }

    if (open_targets(&s, &launched, err))
        goto out;
    if (o->output)
        snprintf(path, sizeof path, "%s", o->output);
    else
        default_output(&s, path, sizeof path);
    s.start_ns = rec_now_ns();
    if (!(s.writer = zs_writer_create(path, uid, gid, err)) || !(s.stacks = rec_stacks_new()) ||
        write_header(&s, err))
        goto out;
    for (size_t i = 0; i < s.nslots; i++) {
        slot *sl = &s.slots[i];
        if (write_process(&s, &sl->target, err) ||
            !(sl->capture = rec_capture_new(sl->target.pid, &sl->target.layout, s.writer))) {
            if (!err->code)
                zs_fail(err, ZS_E_NOMEM, "capture");
            goto out;
        }
        say(&s, "recording pid %d (%s, Zeek %s, layout from %s) at %g Hz into %s", (int)sl->target.pid,
            sl->target.exe, sl->target.zeek_version, rec_layout_source_name(sl->target.layout_source),
            o->rate_hz, path);
    }
    if (zs_writer_flush(s.writer, err))
        goto out;
    raise_priority(&s);
    if (launched)
        rec_ptrace_resume(&s.slots[0].tracee);
    if (sample_loop(&s, err))
        goto out;
    if (stop_requested)
        say(&s, "stopping on signal %d", (int)stop_requested);
    rc = 0;
out:
    /* Targets first: whatever else failed, they must run on untraced. */
    for (size_t i = 0; i < s.nslots; i++)
        rec_ptrace_detach(&s.slots[i].tracee);
    if (launched && rc != 0 && !s.writer) {
        kill(launched, SIGKILL); /* never started for real */
        waitpid(launched, NULL, 0);
    }
    if (s.writer) {
        zs_error close_err = {0};
        if (rc == 0) {
            report_end(&s, path);
            if (zs_writer_close(s.writer, s.stats.samples, s.stats.skipped,
                                since_start_us(&s, rec_now_ns()), &close_err)) {
                *err = close_err;
                rc = -1;
            }
        } else {
            uint64_t written = zs_writer_bytes_written(s.writer);
            zs_writer_abandon(s.writer);
            if (written)
                fprintf(stderr, "%s: what was recorded before the error stays valid in %s\n", PROG,
                        path);
        }
    }
    for (size_t i = 0; i < s.nslots; i++) {
        rec_sampler_free(s.slots[i].sampler);
        rec_capture_free(s.slots[i].capture);
    }
    rec_stacks_free(s.stacks);
    free(s.slots);
    return rc;
}
