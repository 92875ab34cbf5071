/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a target runs, and moving the recorder there. A blocking sample
 * taken from another CPU pays two cross-CPU wake-ups: the target's stop
 * wakes the recorder's idle CPU, and PTRACE_CONT wakes the target's, idle
 * while it was held (measured on an idle 2-core VM: stop p50 88 us from the
 * other CPU, 18 us from the target's own). On the target's CPU the
 * real-time recorder preempts it, and the stop and the resume are local. */
#ifndef REC_CPU_H
#define REC_CPU_H

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rec_cpu {
    int stat_fd; /* /proc/PID/stat, kept open: one pread per lookup */
} rec_cpu;

int rec_cpu_open(rec_cpu *c, pid_t pid);
void rec_cpu_close(rec_cpu *c);

/* The CPU the target last ran on, or -1 when unknown (one read of
 * /proc/PID/stat: about as costly as a sample's reads, so only when needed). */
int rec_cpu_current(rec_cpu *c);

/* The CPU time (user and system) process pid has used so far, from
 * /proc/PID/stat; 0 when unknown. */
uint64_t rec_cpu_time_ns(pid_t pid);

/* The one CPU the target is pinned to (its affinity mask), or -1 when it
 * may run on several. Production workers are usually pinned. */
int rec_cpu_pinned(pid_t pid);

/* Moves the calling thread to cpu when home (the CPUs it was started on:
 * a recorder pinned by its user stays where it was put) allows it; no-op
 * when already there or cpu < 0. 1 when it moved. */
int rec_cpu_move_self(int cpu, const cpu_set_t *home);

#endif
