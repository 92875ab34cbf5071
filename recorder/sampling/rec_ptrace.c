/* SPDX-License-Identifier: BSD-3-Clause */
#include "sampling/rec_ptrace.h"
#include "base/rec_constants.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "base/rec_clock.h"
#include "targets/rec_access.h"

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
            rec_access_denied_why(pid, why, sizeof why);
            return zs_fail(err, ZS_E_PERMISSION, "pid %d: ptrace not permitted: %s", (int)pid, why);
        }
        return zs_fail(err, ZS_E_TARGET, "pid %d: PTRACE_SEIZE: %s", (int)pid, strerror(errno));
    }
    t->seized = 1;
    t->state = REC_TRACEE_RUNNING;
    return 0;
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

int rec_ptrace_regs(pid_t pid, struct user_regs_struct *regs)
{
    struct iovec v = {regs, sizeof *regs};
    return ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &v) == 0 ? 0 : -1;
}
