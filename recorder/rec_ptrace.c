#include "rec_ptrace.h"
#include "rec_constants.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "rec_clock.h"

int rec_ptrace_seize(rec_tracee *t, pid_t pid, int trace_exec, zs_error *err)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    long opts = trace_exec ? PTRACE_O_TRACEEXEC : 0;
    if (ptrace(PTRACE_SEIZE, pid, 0, opts) != 0) {
        if (errno == ESRCH)
            return zs_fail(err, ZS_E_NO_PROCESS, "pid %d: no such process", (int)pid);
        if (errno == EPERM) {
            char why[512];
            rec_ptrace_denied_why(pid, why, sizeof why);
            return zs_fail(err, ZS_E_PERMISSION, "pid %d: ptrace not permitted: %s", (int)pid, why);
        }
        return zs_fail(err, ZS_E_TARGET, "pid %d: PTRACE_SEIZE: %s", (int)pid, strerror(errno));
    }
    t->seized = 1;
    t->state = REC_TRACEE_RUNNING;
    return 0;
}

/* The value of a "Key:" line of /proc/WHO/status, or "" when there is none. */
static void status_value(const char *who, const char *key, char *out, size_t len)
{
    char path[64], line[256];
    size_t klen = strlen(key);
    snprintf(path, sizeof path, "/proc/%s/status", who);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen))
            continue;
        const char *v = line + klen + strspn(line + klen, " \t");
        snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    if (f)
        fclose(f);
}

/* The first line of a small file, or "" when it cannot be read. */
static void first_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f && fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    if (f)
        fclose(f);
}

/* CAP_SYS_PTRACE (bit 19) in this process's effective set. */
static int can_trace_any(void)
{
    char caps[32];
    status_value("self", "CapEff:", caps, sizeof caps);
    return (strtoull(caps, NULL, 16) >> 19) & 1;
}

/* Kernel.yama.ptrace_scope, or -1 without Yama. */
static int yama_scope(void)
{
    char v[16];
    first_line("/proc/sys/kernel/yama/ptrace_scope", v, sizeof v);
    return v[0] ? atoi(v) : -1;
}

/* Whether this process is in the initial user namespace, whose uid map is
 * the whole range: a capability held elsewhere counts only inside. */
static int initial_user_ns(void)
{
    char map[128];
    unsigned long inside = 1, outside = 1, count = 0;
    first_line("/proc/self/uid_map", map, sizeof map);
    return sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
           count == 4294967295UL;
}

int rec_ptrace_host_pids(void)
{
    char name[32];
    status_value("2", "Name:", name, sizeof name);
    return !strcmp(name, "kthreadd");
}

void rec_ptrace_denied_why(pid_t pid, char *buf, size_t len)
{
    char who[32], tracer[32], comm[64] = "", path[64];
    snprintf(who, sizeof who, "%d", (int)pid);
    status_value(who, "TracerPid:", tracer, sizeof tracer);
    int scope = yama_scope();
    if (atoi(tracer) > 0) {
        snprintf(path, sizeof path, "/proc/%s/comm", tracer);
        first_line(path, comm, sizeof comm);
        snprintf(buf, len, "pid %d is traced already, by pid %s (%s): one tracer at a time; detach "
                 "that one (a debugger, strace, another recorder) first", (int)pid, tracer,
                 comm[0] ? comm : "?");
    } else if (scope == 3) {
        snprintf(buf, len, "kernel.yama.ptrace_scope is 3: no process may trace another until the "
                 "next boot");
    } else if (!can_trace_any() && geteuid() != 0) {
        snprintf(buf, len, "run as root or with CAP_SYS_PTRACE%s",
                 scope == 1   ? " (kernel.yama.ptrace_scope is 1: without it only a process's own "
                                "children can be traced)"
                 : scope == 2 ? " (kernel.yama.ptrace_scope is 2: no process can be traced without it)"
                              : "");
    } else if (!can_trace_any()) {
        snprintf(buf, len, "the recorder runs as root but without CAP_SYS_PTRACE (a container or a "
                 "service's sandbox dropped it): grant it (docker run --cap-add=SYS_PTRACE; "
                 "AmbientCapabilities=CAP_SYS_PTRACE), or run the recorder on the host");
    } else if (!initial_user_ns()) {
        snprintf(buf, len, "the recorder has CAP_SYS_PTRACE only in its own user namespace (a "
                 "container's), and pid %d is outside it: run the recorder on the host", (int)pid);
    } else if (!rec_ptrace_host_pids()) {
        snprintf(buf, len, "the recorder has CAP_SYS_PTRACE, but runs in a container (a PID namespace "
                 "of its own), whose runtime does not let it trace pid %d: run the recorder on the "
                 "host, with the host's pid of zeek", (int)pid);
    } else {
        snprintf(buf, len, "the recorder has CAP_SYS_PTRACE, yet the kernel refused: a security "
                 "module (Landlock, AppArmor, SELinux: the audit log says which) or a sandbox around "
                 "the recorder forbids tracing pid %d; run the recorder on the host, outside any "
                 "sandbox", (int)pid);
    }
}

int rec_ptrace_interrupt(rec_tracee *t, uint64_t now_ns)
{
    if (t->state == REC_TRACEE_GONE)
        return 1;
    if (t->state != REC_TRACEE_RUNNING || t->job_stopped)
        return 0;
    if (ptrace(PTRACE_INTERRUPT, t->pid, 0, 0) != 0) {
        /* ESRCH: dead, or in a stop not collected yet; either way its next
         * status tells, and the caller's deadline bounds the wait. */
        if (errno != ESRCH)
            return 0;
    }
    t->state = REC_TRACEE_INTERRUPTED;
    t->interrupt_ns = now_ns;
    return 0;
}

pid_t rec_ptrace_collect(int *status)
{
    for (;;) {
        /* This thread's own children and tracees only: those of --all's
         * scout thread (its sandboxed inspectors) are its to reap. */
        pid_t r = waitpid(-1, status, __WALL | __WNOTHREAD | WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        return r > 0 ? r : 0;
    }
}

rec_tracee_state rec_ptrace_update(rec_tracee *t, int status)
{
    t->exec_stop = 0;
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        t->wait_status = status;
        return t->state = REC_TRACEE_GONE;
    }
    if (!WIFSTOPPED(status))
        return t->state;
    int event = status >> 16, sig = WSTOPSIG(status);
    if (event == PTRACE_EVENT_STOP) {
        /* A group-stop (job control stopped the process): it stays stopped,
         * as it would without us, until SIGCONT. Else our interrupt, or the
         * wake-up of a listening tracee. */
        t->job_stopped = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
    } else if (event == 0) {
        t->pending_signal = sig; /* signal-delivery-stop: pass it on */
    } else if (event == PTRACE_EVENT_EXEC) {
        t->exec_stop = 1;
    }
    return t->state = REC_TRACEE_STOPPED;
}

void rec_ptrace_resume(rec_tracee *t)
{
    if (t->state != REC_TRACEE_STOPPED)
        return;
    t->state = REC_TRACEE_RUNNING;
    if (t->job_stopped) {
        ptrace(PTRACE_LISTEN, t->pid, 0, 0);
        return;
    }
    int sig = t->pending_signal;
    t->pending_signal = 0;
    ptrace(PTRACE_CONT, t->pid, 0, sig);
}

int rec_ptrace_wait(uint64_t deadline_ns)
{
    uint64_t now = rec_now_ns();
    uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
    struct timespec ts = {(time_t)(left / 1000000000ULL), (long)(left % 1000000000ULL)};
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    /* SIGCHLD is blocked, so a state change between the last collect and
     * this call leaves it pending, and this returns at once: no lost
     * wake-up. */
    int r = sigtimedwait(&chld, NULL, &ts);
    if (r == SIGCHLD)
        return 1;
    return r < 0 && errno == EINTR ? -1 : 0;
}

int rec_ptrace_await_stop(rec_tracee *t, uint64_t deadline_ns, int stop_on_signal)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(t->pid, &status, __WALL | WNOHANG);
        if (pid < 0 && errno == ECHILD) { /* reaped elsewhere or never ours */
            t->state = REC_TRACEE_GONE;
            return 0;
        }
        if (pid == t->pid) {
            rec_tracee_state st = rec_ptrace_update(t, status);
            if (st == REC_TRACEE_GONE)
                return 0;
            if (st == REC_TRACEE_STOPPED)
                return 1;
            continue;
        }
        if (rec_now_ns() >= deadline_ns)
            return -1;
        if (rec_ptrace_wait(deadline_ns) < 0 && stop_on_signal)
            return -1;
    }
}

int rec_ptrace_wait_exec(rec_tracee *t, uint64_t deadline_ns, zs_error *err)
{
    for (;;) {
        int r = rec_ptrace_await_stop(t, deadline_ns, 1);
        if (r == 0)
            return zs_fail(err, ZS_E_TARGET, "the command exited before it started (not found?)");
        if (r < 0)
            return zs_fail(err, ZS_E_TARGET, "the command did not reach its exec (in time)");
        if (t->exec_stop)
            return 0; /* left stopped: the caller inspects, then resumes */
        rec_ptrace_resume(t);
    }
}

/* Detaches a tracee in a collected stop, handing back what it was about to
 * receive; a job-control stop stays in force. */
static void detach_stopped(rec_tracee *t)
{
    ptrace(PTRACE_DETACH, t->pid, 0, t->job_stopped ? 0 : t->pending_signal);
    t->seized = 0;
    t->state = REC_TRACEE_RUNNING;
}

size_t rec_ptrace_release(rec_tracee *const *t, size_t n, uint64_t deadline_ns)
{
    uint64_t now = rec_now_ns();
    for (size_t i = 0; i < n; i++) {
        if (!t[i]->seized || t[i]->state == REC_TRACEE_GONE)
            continue;
        if (t[i]->state == REC_TRACEE_STOPPED)
            detach_stopped(t[i]);
        else if (t[i]->state == REC_TRACEE_RUNNING) {
            /* A listening (job-stopped) tracee is not in a ptrace-stop
             * either: PTRACE_DETACH needs one, so it is interrupted too. */
            if (ptrace(PTRACE_INTERRUPT, t[i]->pid, 0, 0) == 0) {
                t[i]->state = REC_TRACEE_INTERRUPTED;
                t[i]->interrupt_ns = now;
            } else {
                t[i]->state = REC_TRACEE_GONE;
            }
        }
    }
    size_t stuck = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t[i]->seized || t[i]->state == REC_TRACEE_GONE)
            continue;
        /* Signal stops may come before our interrupt's stop: each is
         * detached from, passing its signal on. */
        int r = rec_ptrace_await_stop(t[i], deadline_ns, 0);
        if (r > 0)
            detach_stopped(t[i]);
        else if (r < 0)
            stuck++;
    }
    return stuck;
}
