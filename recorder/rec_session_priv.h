/* The session's own state, shared by its two halves: rec_session.c (the
 * targets: found, checked, seized, released) and rec_loop.c (the sampling
 * loop). Not an interface for anything else. */
#ifndef REC_SESSION_PRIV_H
#define REC_SESSION_PRIV_H

#include <sched.h>
#include <stdint.h>

#include "rec_cpu.h"
#include "rec_discover.h"
#include "rec_mixed.h"
#include "rec_native.h"
#include "rec_output.h"
#include "rec_ptrace.h"
#include "rec_sampler.h"
#include "rec_session.h"
#include "rec_stats.h"
#include "rec_top.h"

enum {
    MAX_TARGETS = 1024,
    RESCAN_NS = 2000000000,       /* how often --all looks for new zeeks */
    /* A target that has not reached its stop this long after an interrupt
     * (uninterruptible sleep on a slow disk, a stopped VM) costs ticks:
     * they are skipped and counted, not credited to the late stop. */
    STOP_DEADLINE_NS = 1000000000,
    /* A target interrupted from another CPU usually stops within tens of
     * microseconds on a quiet host; sleeping meanwhile lets the recorder's
     * CPU go idle, and waking it costs as much again (idle 2-core VM, one
     * target: stop p50 84-92 us sleeping, 34-38 us spinning up to 40 us).
     * So spin that long, but not again for a while after a spin in vain:
     * on a saturated host stops take milliseconds, and spinning would only
     * take CPU from the targets. Never on the target's own CPU, where it would
     * keep the target from running at all. */
    SPIN_NS = 40000,
    SPIN_BACKOFF_TICKS = 16,
    RELEASE_NS = 1000000000,      /* to leave every target running untraced */
    EXEC_DEADLINE_NS = 10000000000LL, /* launch: from release to exec */
};

/* The ticks one blocking stop stands for: the one it was interrupted for,
 * and owed more that passed before the stop came, the last at last_ns
 * (the ones between are placed evenly: their exact times are not kept). */
typedef struct tick_span {
    uint64_t tick_ns, owed, last_ns;
} tick_span;

/* --native: a sample waiting for its unwind (the unwinder answers in
 * order). Its script frames are kept until then. */
typedef struct pending_sample {
    tick_span ticks;
    zs_frame *frames;
    uint64_t *addrs; /* 8.1+: each script frame's Frame (in frames' block), else NULL */
    size_t nscript;
    int cut;
    int unwound; /* its capture went to the unwinder; else written with script frames only */
} pending_sample;

/* Samples wait in order, so that each is written at its time: at most
 * NATIVE_UNWINDS of them for an unwind (64 ms at 1 kHz, 0.64 s at 100 Hz),
 * and those taken while the unwinder is that far behind queue after them
 * without native frames. */
enum { NATIVE_PENDING = 128, NATIVE_UNWINDS = 64 };

/* One target. Heap-allocated and never moved: the sampler and the output
 * keep pointers to its layout. */
typedef struct slot {
    rec_target target;
    rec_tracee tracee;
    rec_sampler *sampler;
    rec_native *native;  /* --native: its unwinder, or NULL */
    int native_taken;    /* registers and stack copied in this sample's window */
    int said_native_broken;
    pending_sample pending[NATIVE_PENDING]; /* a ring, oldest at pending_head */
    unsigned pending_head, npending, nunwinds; /* nunwinds of them unwound */
    rec_cpu cpu;
    int active;
    int refused;         /* --all: not a usable zeek; not tried again */
    double last_nettime; /* last network_time written to the recording */
    /* The blocking sample under way and the ticks it stands for. */
    int wanted;
    tick_span ticks;
    int warned_late;
    int pinned_cpu;      /* the one CPU it may run on, or -1; checked each second */
    uint64_t taken, credited; /* per process, for the end report */
} slot;

typedef struct session {
    const rec_options *o;
    slot **slots;
    size_t nslots;
    size_t active;
    rec_output *out;
    rec_discover *discover;
    rec_top *top;        /* --top, or NULL */
    rec_stats stats;
    uint64_t start_ns;
    uint64_t period_ns;
    cpu_set_t home;      /* the CPUs the recorder was started on */
    int follow_cpu;      /* sample each target from its own CPU */
    int realtime;        /* the recorder got SCHED_FIFO */
    int moved;           /* it left its home CPUs to follow a target */
    int spin_backoff;    /* ticks to go without spinning after a spin in vain */
    int said_demoted;
    /* Counters already written as events (the totals are in stats). */
    uint64_t skipped_written, torn_written, deep_written, failed_written, credited_written,
        late_written;
    zs_frame frames[ZS_MAX_FRAMES];
    uint64_t frame_addrs[ZS_MAX_FRAMES]; /* 8.1+: where each of frames' Frames is */
    /* --native: the unwind and the mixed stack of one sample. */
    rec_mixed_native natives[REC_NATIVE_MAX_FRAMES];
    zs_frame mixed[ZS_MAX_FRAMES];
    uint64_t native_samples, native_mismatched, native_failed;
    uint64_t native_behind; /* written without native frames: the unwinder's ring was full */
} session;

/* rec_session.c */
void rec_session_say(const struct session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
uint64_t rec_session_us(const struct session *s, uint64_t ns);
int rec_session_target_gone(struct session *s, slot *sl, zs_error *err);
int rec_session_scan(struct session *s, zs_error *err);

/* rec_loop.c: samples until told to stop, the duration ends or no target is
 * left; then the end-of-run report. */
int rec_loop_run(struct session *s, zs_error *err);
/* Writes sl's samples still waiting for their unwinds (wait: until each is
 * answered, else those answered already). */
int rec_loop_native_drain(struct session *s, slot *sl, int wait, zs_error *err);
void rec_loop_report(const struct session *s);

#endif
