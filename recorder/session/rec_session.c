/* SPDX-License-Identifier: BSD-3-Clause */
#include "session/rec_session.h"
#include "base/rec_constants.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rec_clock.h"
#include "session/rec_session_priv.h"
#include "targets/rec_access.h"
#include "base/rec_signals.h"
#include "zs_grow.h"

/* ---- Targets: found and checked first, touched only once the recording
 * is open, so that nothing that can refuse happens after a process was
 * launched or seized. */

/* Launch mode, step 1: the child waits on a pipe, not yet exec'ed, until
 * the recorder is ready; a recorder that fails or dies first closes the
 * pipe and the child exits without running the command. */
static int fork_waiting_child(session *s, slot *sl, int *go, zs_error *err)
{
    int fds[2], said[2]; /* said: the child's errno when its exec fails (closed by a good one) */
    if (pipe2(fds, O_CLOEXEC) != 0)
        return zs_fail(err, ZS_E_TARGET, "pipe: %s", strerror(errno));
    if (pipe2(said, O_CLOEXEC) != 0) {
        close(fds[0]);
        close(fds[1]);
        return zs_fail(err, ZS_E_TARGET, "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        close(said[0]);
        close(said[1]);
        return zs_fail(err, ZS_E_TARGET, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        char c;
        close(fds[1]);
        close(said[0]);
        rec_signals_reset_for_exec();
        /* zeek is scheduled as it would be without us (see yield_to_zeek) */
        struct sched_param normal = {.sched_priority = 0};
        sched_setscheduler(0, SCHED_OTHER, &normal);
        if (read(fds[0], &c, 1) != 1)
            _exit(127);
        execvp(s->o->command[0], s->o->command);
        int e = errno;
        if (write(said[1], &e, sizeof e) != sizeof e)
            _exit(127);
        _exit(127);
    }
    close(fds[0]);
    close(said[1]);
    *go = fds[1];
    s->exec_said = said[0];
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
    if (rc == 0 && rec_ptrace_wait_exec(&sl->tracee, rec_now_ns() + EXEC_DEADLINE_NS, err)) {
        int e = 0; /* gone before its exec: the child says why, when its exec failed */
        if (read(s->exec_said, &e, sizeof e) == sizeof e && e)
            zs_fail(err, ZS_E_TARGET, "cannot run %s: %s", s->o->command[0], strerror(e));
        return -1;
    }
    if (rc == 0 && rec_target_open(pid, &s->o->layout, NULL, &sl->target, err)) {
        zs_error why = *err; /* release_targets kills it in its exec stop */
        zs_fail(err, why.code, "%s; the command was killed before it ran any of its code", why.detail);
        return -1;
    }
    return rc;
}

/* Opens and checks one running process without touching it. */
/* Before the recording is open: launch (waiting), or find and check. */
static int prepare_targets(session *s, int *go, zs_error *err)
{
    const rec_options *o = s->o;
    if (o->command) {
        slot *sl = rec_slot_new(s, err);
        return !sl || fork_waiting_child(s, sl, go, err) ? -1 : 0;
    }
    if (o->all) {
        if (!(s->find = malloc(sizeof *s->find)) ||
            !(s->scout = rec_scout_new(&o->layout, o->scan_every_s > 0 ? (uint64_t)(o->scan_every_s * 1e9)
                                                                    : RESCAN_NS, err)))
            return s->find ? -1 : zs_fail(err, ZS_E_NOMEM, "discovery");
        rec_scout_scan_now(s->scout);
        if (rec_slots_adopt(s, err))
            return -1;
    } else {
        for (size_t i = 0; i < o->npids && !rec_signals_stop_requested(); i++) {
            slot *sl = rec_slot_new(s, err);
            if (!sl)
                return -1;
            zs_error why = {0};
            if (rec_slot_inspect(s, sl, o->pids[i], &why)) {
                if (o->npids == 1) {
                    *err = why;
                    return -1;
                }
                /* Among several, one bad pid does not stop the others. */
                rec_slot_refuse(s, sl, o->pids[i], &why);
                continue;
            }
            sl->active = 1;
        }
    }
    size_t usable = 0;
    for (size_t i = 0; i < s->nslots; i++)
        usable += s->slots[i]->active;
    if (!usable && !rec_signals_stop_requested() && o->all)
        return zs_fail(err, ZS_E_NO_PROCESS, "--all: no zeek process found%s", rec_access_host_pids() ? ""
                       : " (the recorder runs in a container and sees only its processes: run it on the host)");
    if (!usable && !rec_signals_stop_requested())
        return zs_fail(err, ZS_E_NO_PROCESS, "none of the given processes can be recorded (each "
                       "warning above says why)");
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
        return rec_slot_activate(s, sl, err);
    }
    zs_error first = {0};
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = s->slots[i];
        if (!sl->active)
            continue;
        sl->active = 0;
        zs_error why = {0};
        if (rec_slot_seize(s, sl, &why)) {
            if (s->nslots > 1)
                rec_slot_refuse(s, sl, sl->target.pid, &why);
            else /* alone, its refusal is the error itself: said once */
                sl->refused = 1;
            if (!first.code)
                first = why;
            continue;
        }
        if (rec_slot_activate(s, sl, err))
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
            rec_say(s, "note: no real-time priority (%s); using nice -10", strerror(errno));
    }
    if (setpriority(PRIO_PROCESS, 0, -10) != 0 && s->o->verbose)
        rec_say(s, "note: cannot raise priority (%s); stop times may have a longer tail",
            strerror(errno));
}

/* The BPF sampler's records wait in the kernel's ring: the recorder need
 * not run the moment it wakes. SCHED_BATCH keeps its wake-ups (and its
 * unwinders', forked after this) from preempting the task on that CPU,
 * zeek on a busy host; it still gets its fair share. */
static void yield_to_zeek(const session *s)
{
    struct sched_param sp = {.sched_priority = 0};
    if (sched_setscheduler(0, SCHED_BATCH, &sp) != 0 && s->o->verbose)
        rec_say(s, "note: cannot switch to SCHED_BATCH (%s): the recorder's wake-ups may preempt "
                "zeek", strerror(errno));
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
    rec_tracee **tracees = malloc((s->nslots ? s->nslots : 1) * sizeof *tracees);
    size_t n = 0;
    for (size_t i = 0; tracees && i < s->nslots; i++)
        if (s->slots[i]->tracee.seized)
            tracees[n++] = &s->slots[i]->tracee;
    /* Without memory for the list: the kernel releases them as the recorder exits. */
    size_t stuck = tracees ? rec_ptrace_release(tracees, n, rec_now_ns() + RELEASE_NS) : n;
    free(tracees);
    if (stuck)
        fprintf(stderr, "%s: %zu target%s did not stop within 1 s to be detached; the kernel "
                "releases %s as the recorder exits\n", REC_PROG, stuck, stuck == 1 ? "" : "s",
                stuck == 1 ? "it" : "them");
}

int rec_session_run(const rec_options *o, zs_error *err)
{
    session s = {.o = o, .exec_said = -1};
    int rc = -1, go = -1, sampling = 0;
    sched_getaffinity(0, sizeof s.home, &s.home);
    s.follow_cpu = !o->nonblocking && !o->bpf && !o->no_follow_cpu;
    if (o->bpf)
        yield_to_zeek(&s);
    if (prepare_targets(&s, &go, err) || rec_signals_stop_requested())
        goto out;
    if (o->top && !(s.top = rec_top_new(o->top_window_s, !o->output, o->quiet, err)))
        goto out;
    rec_output_config oc = {
        .path = o->output ? o->output : rec_top_scratch_path(s.top), .rate_hz = o->rate_hz, .nonblocking = o->nonblocking,
        .rotate_bytes = o->rotate_bytes, .rotate_seconds = o->rotate_seconds,
        .max_bytes = o->max_bytes, .sampler = o->bpf ? "bpf" : "ptrace",
        .cpu_only = o->bpf && o->cpu_only,
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
    if (s.scout && rec_scout_start(s.scout, err))
        goto out;
    if (rec_signals_stop_requested()) {
        rc = 0; /* before the first sample: a valid, empty recording */
        goto out;
    }
    rec_say(&s, "sampling %zu process%s at %g Hz into %s%s", s.active, s.active == 1 ? "" : "es",
        o->rate_hz, rec_output_path(s.out),
        !o->bpf ? "" : o->cpu_only ? " with the BPF sampler, on-CPU time only (zeek never stopped)"
                                   : " with the BPF sampler (zeek never stopped)");
    if (rec_output_tick(s.out, rec_now_ns(), 0, 0, err))
        goto out;
    if (!o->bpf) /* zeek never waits for the recorder: nothing to hurry */
        raise_priority(&s);
    if (s.top)
        rec_top_begin(s.top, s.start_ns);
    if (o->command && (o->nonblocking || o->bpf)) {
        /* Traced only to catch its exec: let it go for good. */
        rec_tracee *child = &s.slots[0]->tracee;
        rec_ptrace_release(&child, 1, rec_now_ns() + RELEASE_NS);
    } else if (o->command) {
        rec_ptrace_resume(&s.slots[0]->tracee);
    }
    sampling = 1;
    int looped = rec_loop_run(&s, err);
    s.end_ns = rec_now_ns(); /* rates are over the sampling, not the release after it */
    if (looped)
        goto out;
    if (rec_signals_stop_requested())
        rec_say(&s, "stopping on signal %d", rec_signals_stop_requested());
    rc = 0;
out:
    /* Targets first: whatever else failed, they must run on untraced. */
    release_targets(&s, go);
    if (s.scout)
        rec_scout_counts(s.scout, &s.inspections_run, &s.inspections_cached);
    rec_scout_free(s.scout);
    s.scout = NULL;
    rec_top_end(s.top); /* the terminal back before anything is said */
    if (s.out && rc == 0)
        rc = rec_report_end(&s, err); /* said, and kept in the recording for --info */
    if (s.out && rc == 0) {
        rc = rec_output_close(s.out, rec_since_start_us(&s, rec_now_ns()), err);
    } else if (s.out && !sampling) {
        rec_output_discard(s.out); /* refused before any sample: no file left behind */
    } else if (s.out) {
        if (rec_output_bytes(s.out))
            fprintf(stderr, "%s: what was recorded before the error stays valid in %s\n", REC_PROG,
                    rec_output_path(s.out));
        rec_output_abandon(s.out);
    }
    if (rc && rec_signals_stop_requested() && !s.active) {
        /* Start-up failed because it was told to stop: not an error. */
        rec_say(&s, "stopped on signal %d before recording started", rec_signals_stop_requested());
        rc = 0;
    }
    for (size_t i = 0; i < s.nslots; i++)
        rec_slot_free(s.slots[i]);
    free(s.slots);
    free(s.find);
    rec_top_free(s.top); /* after the output is closed: removes a scratch recording */
    if (s.exec_said >= 0)
        close(s.exec_said);
    return rc;
}
