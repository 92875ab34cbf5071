#include "rec_session.h"

#include <errno.h>
#include <fcntl.h>
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
#include "rec_session_priv.h"
#include "rec_signals.h"

static const char PROG[] = "zeek-spy-record";

uint64_t rec_session_us(const session *s, uint64_t ns)
{
    return ns > s->start_ns ? (ns - s->start_ns) / 1000 : 0;
}

void rec_session_say(const session *s, const char *fmt, ...)
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
    rec_session_say(s, "recording pid %d (%s, Zeek %s, layout from %s%s%s)", (int)sl->target.pid,
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
            rec_session_say(s, "warning: pid %d: no native frames: %s", (int)sl->target.pid, why.detail);
        else
            rec_sampler_set_rider(sl->sampler, rec_native_rider, sl->native);
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
    rec_session_say(s, "warning: skipping pid %d: %s", (int)pid, why->detail);
}

/* --all: inspects the zeek processes not seen yet. With the recording open
 * (rescans) each usable one is seized and recorded at once; before it (the
 * first scan) they are only inspected, and seized once it is open. */
int rec_session_scan(session *s, zs_error *err)
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
            rec_output_event(s->out, rec_session_us(s, rec_now_ns()), pids[i], ZS_EV_ATTACHED,
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
        if (rec_session_scan(s, err))
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
        if (setrlimit(RLIMIT_RTTIME, &rt) == 0 && sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
            s->realtime = 1;
            return;
        }
        if (s->o->verbose)
            rec_session_say(s, "note: no real-time priority (%s); using nice -10", strerror(errno));
    }
    if (setpriority(PRIO_PROCESS, 0, -10) != 0 && s->o->verbose)
        rec_session_say(s, "note: cannot raise priority (%s); stop times may have a longer tail",
            strerror(errno));
}

int rec_session_target_gone(session *s, slot *sl, zs_error *err)
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
    rec_session_say(s, "%s", msg);
    if (sl->npending && rec_loop_native_drain(s, sl, 1, err)) /* its last samples */
        return -1;
    int rc = rec_output_event(s->out, rec_session_us(s, rec_now_ns()), sl->target.pid,
                              ZS_EV_TARGET_EXITED, (uint64_t)st, msg, err);
    rec_output_drop_process(s->out, sl->target.pid);
    return rc;
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
    rec_session_say(&s, "sampling %zu process%s at %g Hz into %s", s.active, s.active == 1 ? "" : "es",
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
    if (rec_loop_run(&s, err))
        goto out;
    if (rec_signals_stop_requested())
        rec_session_say(&s, "stopping on signal %d", rec_signals_stop_requested());
    rc = 0;
out:
    /* Targets first: whatever else failed, they must run on untraced. */
    release_targets(&s, go);
    rec_top_end(s.top); /* the terminal back before anything is said */
    if (s.out && rc == 0) {
        rec_loop_report(&s);
        rc = rec_output_close(s.out, rec_session_us(&s, rec_now_ns()), err);
    } else if (s.out) {
        if (rec_output_bytes(s.out))
            fprintf(stderr, "%s: what was recorded before the error stays valid in %s\n", PROG,
                    rec_output_path(s.out));
        rec_output_abandon(s.out);
    }
    if (rc && rec_signals_stop_requested() && !s.active) {
        /* Start-up failed because it was told to stop: not an error. */
        rec_session_say(&s, "stopped on signal %d before recording started", rec_signals_stop_requested());
        rc = 0;
    }
    for (size_t i = 0; i < s.nslots; i++) {
        rec_sampler_free(s.slots[i]->sampler);
        rec_native_free(s.slots[i]->native);
        for (unsigned k = 0; k < NATIVE_PENDING; k++) /* left by an error */
            free(s.slots[i]->pending[k].frames);
        rec_cpu_close(&s.slots[i]->cpu);
        free(s.slots[i]);
    }
    free(s.slots);
    rec_discover_free(s.discover);
    rec_top_free(s.top); /* after the output is closed: removes a scratch recording */
    return rc;
}
