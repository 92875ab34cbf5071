/* SPDX-License-Identifier: BSD-3-Clause */
/* ptrace for sampling: one PTRACE_SEIZE per target (its main thread, which
 * runs Zeek's scripts; other threads are never stopped), then per sample
 * PTRACE_INTERRUPT, the stop collected by rec_ptrace_collect, read,
 * PTRACE_CONT. Nothing here waits for one tracee: stops are collected as
 * they arrive, from any tracee, so a target that is slow to stop (waiting
 * for a core, in uninterruptible sleep) holds up neither the recorder nor
 * the other targets. Each tracee knows its state, so no step ever waits
 * for a stop that cannot come. Signals the target receives while traced
 * are passed on unchanged. */
#ifndef REC_PTRACE_H
#define REC_PTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "zs_error.h"

typedef enum rec_tracee_state {
    REC_TRACEE_RUNNING,     /* running (or job-stopped and listening) */
    REC_TRACEE_INTERRUPTED, /* PTRACE_INTERRUPT sent, its stop not collected yet */
    REC_TRACEE_STOPPED,     /* in a ptrace-stop we collected: read, then resume */
    REC_TRACEE_GONE,        /* exited or killed */
} rec_tracee_state;

typedef struct rec_tracee {
    pid_t pid;
    int seized;
    rec_tracee_state state;
    int pending_signal; /* to deliver at the next resume */
    int job_stopped;    /* in group-stop (SIGSTOP): kept stopped with PTRACE_LISTEN */
    int exec_stop;      /* the current stop is the stop at its exec */
    int wait_status;    /* valid when gone */
    uint64_t interrupt_ns; /* when the pending interrupt was sent */
} rec_tracee;

int rec_ptrace_seize(rec_tracee *t, pid_t pid, int trace_exec, zs_error *err);

/* Asks a running tracee to stop; never waits. A tracee already stopped, or
 * held by job control, needs no interrupt. Returns 0, or 1 when it is gone. */
int rec_ptrace_interrupt(rec_tracee *t, uint64_t now_ns);

/* Collects one pending wait status of any tracee or child, never blocking:
 * the pid, or 0 when there is none. */
pid_t rec_ptrace_collect(int *status);

/* Applies a collected wait status to its tracee; returns the new state. */
rec_tracee_state rec_ptrace_update(rec_tracee *t, int status);

/* Lets a stopped tracee run again (PTRACE_LISTEN when job control holds
 * it, which keeps it stopped as it would be without us). */
void rec_ptrace_resume(rec_tracee *t);

/* Sleeps until deadline_ns (CLOCK_MONOTONIC) or until a tracee's state
 * changes. Returns 1 on a change, 0 at the deadline, -1 when a signal
 * handler ran (the caller checks what it asked for). SIGCHLD must be
 * blocked (rec_signals_install). */
int rec_ptrace_wait(uint64_t deadline_ns);

/* Collects this tracee's statuses until it is in a stop (1), gone (0), the
 * deadline passes or, with stop_on_signal, a signal handler ran (-1). */
int rec_ptrace_await_stop(rec_tracee *t, uint64_t deadline_ns, int stop_on_signal);

/* Waits for the exec stop of a freshly seized child (launch mode) until
 * deadline_ns; it is left in that stop. */
int rec_ptrace_wait_exec(rec_tracee *t, uint64_t deadline_ns, zs_error *err);

/* Leaves every tracee running and untraced: those in a stop are detached
 * at once, the others interrupted first, their stops collected until
 * deadline_ns. Returns how many did not stop in time; those are released
 * by the kernel when the recorder exits, which it must then do. */
size_t rec_ptrace_release(rec_tracee *const *t, size_t n, uint64_t deadline_ns);

/* The user registers of a stopped tracee: 0, or -1. */
int rec_ptrace_regs(pid_t pid, struct user_regs_struct *regs);

#endif
