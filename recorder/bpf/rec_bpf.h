/* SPDX-License-Identifier: BSD-3-Clause */
/* The BPF sampler's loader: the kernel side (zs_sampler.bpf.c) takes the
 * stop window's raw reads in the timer interrupt on zeek's own CPU and when
 * zeek's thread leaves the CPU, without stopping or tracing zeek; this
 * loads it, points it at threads and hands its records over.
 *
 * Everything it puts into the kernel hangs on its file descriptors: closing
 * (or the process dying, SIGKILL included) leaves nothing attached. */
#ifndef REC_BPF_H
#define REC_BPF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/rec_bpf_event.h"
#include "targets/rec_target.h"
#include "zs_error.h"

typedef struct rec_bpf rec_bpf;

/* How off-CPU samples are taken. */
typedef enum rec_bpf_offcpu {
    REC_BPF_OFFCPU_NONE,   /* not at all (--cpu-only) */
    REC_BPF_OFFCPU_DUE,    /* when due: user space runs zs_due at the wall clock's ticks (6.1+) */
    REC_BPF_OFFCPU_SWITCH, /* at each switch of the host: zs_switch (the default) */
} rec_bpf_offcpu;

enum rec_bpf_open_flags {
    REC_BPF_NO_OFFCPU = 1 << 0,   /* ticks only: no program on sched_switch */
    REC_BPF_SELF_TIMING = 1 << 1, /* the kernel side times its ticks, leaves, returns (counters) */
    REC_BPF_LEGACY = 1 << 2,      /* the variants of kernels before 5.15, on any kernel (tests) */
    REC_BPF_OFFCPU_WHEN_DUE = 1 << 3, /* off-CPU samples when due where the kernel can (6.1+) */
    REC_BPF_DUE_ITER = 1 << 4,        /* their looks by task iterators, as on 6.1, on any kernel (tests) */
    REC_BPF_DUE_RUN = 1 << 5,         /* their looks at the rate by BPF_PROG_RUN, no timers (tests) */
    REC_BPF_SMALL_RING = 1 << 6,      /* a ring that a few targets fill between two polls (tests) */
};

/* Loads the kernel side for ticks of 1/hz of a thread's CPU time (and,
 * unless flags say otherwise, attaches the off-CPU program). NULL with a
 * one-line reason (ZS_E_NO_BPF, ZS_E_NOMEM) when BPF cannot run here:
 * no root or CAP_BPF + CAP_PERFMON, a pid namespace of our own, kernel
 * lockdown in confidentiality mode, a kernel known to freeze on
 * bpf_probe_read_user, no BTF or BPF ring buffer, a program the kernel
 * refuses. */
rec_bpf *rec_bpf_open(unsigned hz, unsigned flags, zs_error *err);

/* Leaves nothing in the kernel. NULL is fine. */
void rec_bpf_close(rec_bpf *b);

/* The parameters for t's main thread, copying at most max_frames
 * (clamped to REC_BPF_MAX_FRAMES) of its outermost frames. */
int rec_bpf_params_of(const rec_target *t, size_t max_frames, rec_bpf_params *out, zs_error *err);

/* Samples thread tid of process pid: the map entries, then a task-clock
 * perf event on that thread with the tick program attached. Fails with a
 * reason on parameters beyond the kernel side's bounds, a thread already
 * sampled, a full map, or a perf event the kernel refuses. */
int rec_bpf_add_target(rec_bpf *b, pid_t pid, pid_t tid, const rec_bpf_params *p, zs_error *err);

/* How off-CPU samples are taken here (the kernel's offers and flags), and
 * why not when due where it fell back to the switches ("" otherwise). */
rec_bpf_offcpu rec_bpf_offcpu_mode(const rec_bpf *b);
const char *rec_bpf_due_refused(const rec_bpf *b);
/* When due: how the looks run (by BPF_PROG_RUN where the kernel has
 * bpf_task_from_pid, when its timers find one due or else at the rate;
 * else by task iterators), and why not by BPF_PROG_RUN where the kernel
 * refused it ("" otherwise). */
const char *rec_bpf_due_way(const rec_bpf *b);
const char *rec_bpf_due_run_refused(const rec_bpf *b);
/* Whether the looks' verdict is made in the kernel (zs_due_arm's timers:
 * the recorder looks only when told, by a REC_BPF_DUE_NOTICE record that
 * wakes rec_bpf_notice_fd's readers), and why not where the kernel
 * refused it ("" otherwise). */
int rec_bpf_watched(const rec_bpf *b);
const char *rec_bpf_watch_refused(const rec_bpf *b);
/* The ring buffer's file descriptor, to be polled edge-triggered
 * (EPOLLET): only notices wake its readers; -1 when not watched. */
int rec_bpf_notice_fd(const rec_bpf *b);

/* REC_BPF_OFFCPU_DUE: an off-CPU sample of each target thread that is
 * away from its CPU now (zs_due), into the ring; one call a tick of the
 * wall clock. Returns how many threads could not be looked at; *busy: 1
 * when every thread looked at was on its CPU (REC_BPF_DUE_BUSY). */
int rec_bpf_due(rec_bpf *b, int *busy);
/* The same for thread tid alone (by BPF_PROG_RUN: the looks a notice asks
 * for). -1 when it could not be looked at. */
int rec_bpf_due_thread(rec_bpf *b, pid_t tid);
/* REC_BPF_OFFCPU_DUE, at the end of a recording: a look at each thread
 * (first), or at each the last call found on its CPU owing a period or
 * more of time away. Returns how many still owe (0 in the other modes):
 * the caller looks again a moment later, while it may wait. */
int rec_bpf_settle(rec_bpf *b, int first);

/* Stops sampling tid (its perf event closed, its map entries gone).
 * Returns -1 when it was not sampled. */
int rec_bpf_remove_target(rec_bpf *b, pid_t tid);

/* The end of tid's stack copies from now on: the stack's base as the
 * unwinds found it (0: params' stack_bytes from the stack pointer). */
int rec_bpf_set_stack_base(rec_bpf *b, pid_t tid, uint64_t base);

/* The CPU time tid has had since it was added, as its perf event counts
 * it: ticks * the period, unless a late timer swallowed ticks. */
int rec_bpf_thread_cpu_ns(rec_bpf *b, pid_t tid, uint64_t *ns);

/* Called for each record; len is the record's size, checked to hold the
 * header and the bytes it says follow. A negative return stops the poll
 * and is returned by it; REC_BPF_ENOUGH (the record was taken) stops it
 * with the count. */
typedef int (*rec_bpf_cb)(void *ctx, const rec_bpf_event *ev, size_t len);
enum { REC_BPF_ENOUGH = 1 };

/* Hands every record waiting in the ring buffer to cb, oldest first,
 * without waiting for more, or until cb says it has had enough. Returns how many were handed (a malformed one
 * is counted, see rec_bpf_malformed, and skipped), or cb's negative return
 * (or a negative errno from the ring buffer itself). */
int rec_bpf_poll(rec_bpf *b, rec_bpf_cb cb, void *ctx);

/* The kernel side's counters summed over the CPUs, REC_BPF_C__COUNT of
 * them (enum rec_bpf_counter). Returns -1 when they cannot be read. */
int rec_bpf_counters(const rec_bpf *b, uint64_t *out);
/* A counter's name, for messages ("ticks", "bad_callinfo", ...). */
const char *rec_bpf_counter_name(unsigned which);
/* Records rec_bpf_poll skipped as malformed. */
uint64_t rec_bpf_malformed(const rec_bpf *b);

/* The kernel's ids of the programs loaded (zs_tick, and unless
 * REC_BPF_NO_OFFCPU zs_switch, zs_due, or zs_due_run with zs_due_arm where
 * it loaded), as bpftool shows them; returns how many (<= max). */
size_t rec_bpf_programs(const rec_bpf *b, uint32_t *ids, size_t max);

/* How the kernel side finds its target and the user registers on this
 * kernel, for -v ("targets by tid, ..." before 5.15). */
const char *rec_bpf_variant(const rec_bpf *b);

/* The tick period: 1e9 / hz, in ns of a thread's CPU time. */
uint64_t rec_bpf_period_ns(const rec_bpf *b);

/* A record's CallInfo i (callinfo_size bytes) and, in the callinfo-frame
 * model, Frame i's bytes [frame_lo, frame_lo + frame_span) (NULL in the
 * frame-stack model); i < ev->n, in a record rec_bpf_poll handed over. */
const uint8_t *rec_bpf_event_callinfo(const rec_bpf_event *ev, uint32_t i);
const uint8_t *rec_bpf_event_frame(const rec_bpf_event *ev, uint32_t i);
/* The record's stack copy: ev->stack_len bytes from regs' sp up (when
 * ev->flags has REC_BPF_F_REGS). */
const uint8_t *rec_bpf_event_stack(const rec_bpf_event *ev);

/* libbpf's own messages: none (the default), or its warnings on stderr,
 * whole (a refused program's verifier log included). */
void rec_bpf_set_verbose(int verbose);

/* Whether a kernel is too old for the kernel side (before 5.8: no BPF
 * ring buffer) or one that freezes on
 * bpf_probe_read_user: 5.19-6.0, 6.1 before 6.1.36, 6.2, 6.3 before 6.3.10. Its upstream version comes
 * from Ubuntu's /proc/version_signature (signature, NULL when none), else
 * Debian's "Debian 6.1.158-1" in uname -v (version), else uname -r
 * (release). 0 when not (or not parsed), -1 with the reason when it is. */
int rec_bpf_kernel_check(const char *release, const char *version, const char *signature,
                         zs_error *err);

#endif
