/* ptrace for sampling: one PTRACE_SEIZE per target (its main thread, which
 * runs Zeek's scripts; other threads are never stopped), then per sample
 * PTRACE_INTERRUPT, wait, read, PTRACE_CONT. Signals the target receives
 * while traced are passed on unchanged. */
#ifndef REC_PTRACE_H
#define REC_PTRACE_H

#include <sys/types.h>

#include "zs_error.h"

typedef struct rec_tracee {
    pid_t pid;
    int seized;
    int pending_signal; /* to deliver at the next resume */
    int job_stopped;    /* in group-stop (SIGSTOP): left stopped, PTRACE_LISTEN */
    int gone;           /* exited or killed */
    int wait_status;    /* valid when gone */
} rec_tracee;

int rec_ptrace_seize(rec_tracee *t, pid_t pid, int trace_exec, zs_error *err);

/* Stops the tracee. 0: stopped (read it now, then rec_ptrace_resume),
 * 1: the tracee is gone, -1: error. */
int rec_ptrace_stop(rec_tracee *t, zs_error *err);
void rec_ptrace_resume(rec_tracee *t);

/* Handles stops that arrived while the recorder slept (signals to pass on,
 * a late interrupt). Never blocks. Returns 1 when the tracee is gone. */
int rec_ptrace_poll(rec_tracee *t);

/* Waits for the exec stop of a freshly seized child (launch mode). */
int rec_ptrace_wait_exec(rec_tracee *t, zs_error *err);

/* Leaves the tracee running and untraced. */
void rec_ptrace_detach(rec_tracee *t);

#endif
