/* SPDX-License-Identifier: BSD-3-Clause */
/* The session's own state, shared by the files of one recording:
 * rec_session.c (start to end: targets prepared, started, released),
 * rec_loop.c (the sampling loop and its housekeeping), rec_bpf_feed.c (the
 * BPF sampler's records, polled into pending order), rec_pending.c (the
 * samples on their way to the recording), rec_slots.c (each target from
 * found to gone), rec_report.c (what is said) and rec_bpf_sampler.c (the
 * BPF sampler chosen, pointed at each target, its counters). Calls go down
 * that list, never back up. Not an interface for anything else. */
#ifndef REC_SESSION_PRIV_H
#define REC_SESSION_PRIV_H

#include <sched.h>
#include <stdint.h>

#include "sampling/rec_cpu.h"
#include "base/rec_constants.h"
#include "targets/rec_discover.h"
#include "targets/rec_load.h"
#include "native/rec_mixed.h"
#include "frames/rec_model.h"
#include "native/rec_native.h"
#include "frames/rec_zam.h"
#include "output/rec_output.h"
#include "sampling/rec_ptrace.h"
#include "sampling/rec_sampler.h"
#include "targets/rec_scout.h"
#include "session/rec_session.h"
#include "sampling/rec_stats.h"
#include "views/rec_top.h"

enum {
    RESCAN_NS = 2000000000,       /* how often --all looks for new zeeks */
    /* Housekeeping (writing samples, flushes, rotations, new targets) waits
     * while any interrupt is out, since a target whose stop arrives meanwhile
     * would sit stopped until the loop came back. Not for ever. An interrupt
     * older than HOLD_GRACE_NS is one a target cannot answer soon
     * (uninterruptible sleep, a niced process on a saturated host): it holds
     * nothing up. And on a saturated host with many targets some fresh
     * interrupt may always be out: after HOUSEKEEP_MAX_DELAY_NS (or half a
     * ring of samples) housekeeping runs all the same. A stop that waits
     * for it either way shows in the report's (b). */
    HOLD_GRACE_NS = 100000000,
    HOUSEKEEP_MAX_DELAY_NS = 250000000,
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
    BPF_POLL_HZ = 20,             /* --sampler bpf: how often the ring buffer is read */
    /* Off-CPU samples when due: the loop wakes for the looks alone (at
     * the rate, fewer at a busy thread; only when told, where timers in the
     * kernel make their verdict); the records, their unwinds and the
     * writing go together with the cut: each wake-up of the recorder or its
     * unwinder costs more than a sample's own work below a few hundred
     * samples a second (docs/performance.md, "The always-on cost"). The cut
     * comes once a second, and below CUT_SAMPLES a second once every
     * CUT_SAMPLES ticks, at most every CUT_MAX_NS: what a poll, its
     * hand-over and the cut cost (their wake-ups, the load's reads, a zstd
     * frame) then follows the rate. A killed recorder loses at most that. */
    CUT_SAMPLES = 32,
    CUT_MAX_NS = 8000000000LL,
    /* At such a poll, the unwinds of the captures it hands over are waited
     * for this long (an unwinder that has caught up answers a second's
     * captures in a few milliseconds): written with their native frames at
     * this poll, not given up at the cut. */
    POLL_ANSWERS_NS = 50000000,
    /* A poll gives way to housekeeping (the second's cut) and the stop
     * signals after this long, records left or not. */
    BPF_POLL_BUDGET_NS = 100000000,
    /* The second's cut rides on a wake-up (a look, a poll) up to this long
     * before it (a second's records then span 0.75-1 s): no wake-up of its
     * own. */
    CUT_RIDE_NS = 250000000,
    EXEC_DEADLINE_NS = 10000000000LL, /* launch: from release to exec */
};

/* The ticks one blocking stop stands for: the one it was interrupted for,
 * and owed more that passed before the stop came, the last at last_ns
 * (the ones between are placed evenly: their exact times are not kept). */
typedef struct tick_span {
    uint64_t tick_ns, owed, last_ns;
} tick_span;

/* A sample read and not written yet: written once no target is held and,
 * with --native, once its unwind is back (the unwinder answers in order).
 * Its script frames are kept until then. */
typedef struct pending_sample {
    tick_span ticks;
    zs_frame *frames;
    uint64_t *addrs; /* 8.1+: each script frame's Frame (in frames' block), else NULL */
    size_t nscript;
    int cut;
    int unwound; /* its capture is for the unwinder; else written with script frames only */
    rec_zam_found zam; /* its capture's words that may be ZAM's instruction */
    int failed;  /* the read failed: nothing to write, but is the target still there? */
    int off_cpu; /* BPF: taken as zeek left its CPU; its ticks passed while it was away */
} pending_sample;

/* A sample written before its unwind came back (REC_UNWIND_LATE_NS): its
 * native frames follow it into the recording (a NATIVE_LATE record naming
 * it by its time) once the answer is in. */
typedef struct late_sample {
    pending_sample p;
    uint64_t first_us; /* when its first sample was written */
} late_sample;

/* Samples wait in order (REC_PENDING_SAMPLES of them, rec_constants.h),
 * so that each is written at its time; those taken while the unwinder is
 * REC_UNWINDS_OUT behind queue after them without native frames. */

/* One target. Heap-allocated and never moved: the sampler and the output
 * keep pointers to its layout. */
typedef struct slot {
    rec_target target;
    rec_tracee tracee;
    rec_sampler *sampler;
    rec_raw_sample raw;  /* the last window's capture record */
    rec_native *native;  /* --native: its unwinder, or NULL */
    rec_zam *zam;        /* with native frames, a zeek with ZAM bodies: their instructions */
    int capture_unsent;  /* raw.native not handed to the unwinder yet (pending[unsent_at]) */
    int capture_skipped; /* this sample's not taken: the last one was still unsent */
    unsigned unsent_at;
    int said_native_broken;
    pending_sample pending[REC_PENDING_SAMPLES]; /* a ring, oldest at pending_head */
    unsigned pending_head, npending, nunwinds; /* unwinds out: of the ring's samples, and late */
    /* Of the unwinds out, the oldest: their samples written, their native
     * frames to follow (a ring; at most REC_UNWINDS_OUT, as unwinds out). */
    late_sample late[REC_UNWINDS_OUT];
    unsigned late_head, nlate;
    rec_cpu cpu;
    int exit_fd;         /* readable once it exits (rec_target_exit_fd); -1: none */
    int active;
    int gone;            /* exited: its last samples, its exit and its slot to see to */
    int refused;         /* not a usable zeek (one of several -p) */
    double last_nettime; /* last network_time written to the recording */
    rec_load_reader load; /* its load, once a second (load_ready once set up) */
    int load_ready;
    /* The blocking sample under way and the ticks it stands for. */
    int wanted;
    tick_span ticks;
    uint64_t elsewhere_at_interrupt; /* the session's elsewhere_ns then */
    int warned_late;
    int pinned_cpu;      /* the one CPU it may run on, or -1; checked each second */
    uint64_t taken, credited; /* per process, for the end report */
    uint64_t away;            /* BPF: further ticks its off-CPU samples stand for */
    int bpf_added;            /* BPF: the kernel samples its main thread */
    int due_noticed;          /* BPF: a notice said a look at it is due */
    uint64_t reads, stack_copies, stack_copied; /* process_vm_readv calls; stack copies, bytes */
    /* Its ticks that gave no sample, by why, and its stacks cut at the
     * maximum depth: the end report says what was lost, process by process. */
    uint64_t skipped_stuck, skipped_behind, torn, failed, cut;
    uint64_t stop_max_ns, held_max_ns; /* its longest stop, and longest part (c) */
    uint64_t elsewhere_ns, elsewhere_samples; /* its stops' part (b) */
    uint64_t inspect_ns;      /* --all: its inspection took this long */
} slot;

typedef struct session {
    const rec_options *o;
    slot **slots;        /* the targets being recorded, and those just gone */
    size_t nslots, slots_cap;
    size_t active;
    rec_output *out;
    rec_scout *scout;    /* --all */
    rec_scout_find *find; /* --all: room for one find (they are large) */
    uint64_t gone_targets, gone_samples, gone_reads; /* released slots, for the end report */
    uint64_t late_ticks; /* ticks that passed while the loop was late: every target's */
    uint64_t inspections_run, inspections_cached; /* the scout's, at its end */
    rec_top *top;        /* --top, or NULL */
    rec_stats stats;
    uint64_t start_ns;
    uint64_t end_ns;     /* when the sampling loop ended (0: before) */
    uint64_t period_ns;
    cpu_set_t home;      /* the CPUs the recorder was started on */
    int follow_cpu;      /* sample each target from its own CPU */
    int realtime;        /* the recorder got SCHED_FIFO */
    int moved;           /* it left its home CPUs to follow a target */
    int spin_backoff;    /* ticks to go without spinning after a spin in vain */
    int exec_said;       /* launch: the child writes here why its exec failed (-1: none) */
    int said_demoted;
    /* The time the loop spent on housekeeping while an interrupt was out:
     * a stop that came meanwhile waited for it (rec_stats' elsewhere). */
    uint64_t elsewhere_ns;
    uint64_t next_cut, next_stats; /* housekeeping's clock */
    uint64_t cut_every_ns; /* the cut's period: a second, longer at low rates (CUT_SAMPLES) */
    uint64_t cut_ride_ns; /* the cut is taken at a wake-up this much before it */
    uint64_t housekept_ns;            /* when it last ran */
    /* Counters already written as events (the totals are in stats). */
    uint64_t skipped_written, torn_written, deep_written, failed_written, credited_written,
        late_written;
    zs_frame frames[ZS_MAX_FRAMES];
    uint64_t frame_addrs[ZS_MAX_FRAMES]; /* 8.1+: where each of frames' Frames is */
    /* --native: the unwind and the mixed stack of one sample. */
    rec_mixed_native natives[REC_NATIVE_MAX_FRAMES];
    zs_frame mixed[ZS_MAX_FRAMES];
    /* -O ZAM: a sample's frames with the functions ZAM inlined opened up. */
    zs_frame opened[ZS_MAX_FRAMES];
    uint64_t native_samples, native_mismatched, native_failed;
    uint64_t zam_samples[REC_ZAM_AMBIGUOUS + 1]; /* by rec_zam_result */
    uint64_t native_behind; /* written without native frames: the unwinder's ring was
                               full, or the last capture not handed over yet */
    uint64_t native_followed; /* native frames that followed their samples */
    /* The unwinders' counts of targets gone before the end, for the report. */
    uint64_t gone_truncated, gone_general, gone_copied, gone_copies;
    /* --sampler bpf: the further ticks its off-CPU samples stand for; polls that failed. */
    uint64_t away, bpf_poll_errors, bpf_due_errors;
    uint64_t gone_unwinder_ns; /* their unwinders' CPU time */
} session;

/* rec_loop.c: samples until told to stop, the duration ends or no target is left. */
int rec_loop_run(struct session *s, zs_error *err);

/* rec_bpf_feed.c: the BPF sampler's records into the session (s->o->bpf). */
/* The records waiting, kept in pending order, for up to budget_ns: 0 when
 * all were taken, 1 when some are left, -1 when writing failed. */
int rec_bpf_feed_poll(struct session *s, uint64_t budget_ns, zs_error *err);

/* rec_pending.c: the samples taken, on their way to the recording. */
/* Keeps what sl->raw holds (called right after the target was resumed:
 * decodes and copies, nothing more); with_stack: its registers and stack
 * were asked for in this window. */
void rec_pending_keep(struct session *s, slot *sl, int with_stack, tick_span ticks, int off_cpu);
/* Hands the capture kept with the last sample (rec_pending_keep's
 * with_stack) to the unwinder now, while sl->raw's stack is there; the
 * housekeeping does it for the ptrace sampler. */
void rec_pending_submit(struct session *s, slot *sl);
/* Writes the targets' samples, oldest first across all of them, each
 * unwind waited for until answers_until (0: not at all; REC_NATIVE_WAIT:
 * the end, all of them, as long as the unwinder may take), up to the first
 * whose unwind is not back then and that was taken at or after give_up_ns
 * (0: none given up; when a ring is full, every one). Waits for the
 * answers of a target that is gone. */
int rec_pending_write(struct session *s, uint64_t answers_until, uint64_t give_up_ns, zs_error *err);

/* rec_slots.c: a slot per target, from found to gone. */
slot *rec_slot_new(struct session *s, zs_error *err);
void rec_slot_free(slot *sl);
/* Opens and checks one running process without touching it. */
int rec_slot_inspect(struct session *s, slot *sl, pid_t pid, zs_error *err);
/* Blocking mode seizes (nonblocking never traces). */
int rec_slot_seize(struct session *s, slot *sl, zs_error *err);
/* A seized target: its sampler (and unwinder), its line in the recording. */
int rec_slot_activate(struct session *s, slot *sl, zs_error *err);
/* Whether sl's samples take the registers and a stack copy (native
 * frames, or ZAM's instruction alone). */
int rec_slot_wants_stack(const struct session *s, const slot *sl);
void rec_slot_refuse(struct session *s, slot *sl, pid_t pid, const zs_error *why);
/* A target whose exit was collected: it is no longer sampled; the rest
 * (its last samples, the exit in the recording, its slot) is housekeeping. */
void rec_slot_mark_gone(struct session *s, slot *sl);
/* Its exit said and written, its slot freed: s->slots[i] is another then. */
int rec_slots_release_gone(struct session *s, size_t i, zs_error *err);
/* --all: seizes and records what the scout found since the last call. */
int rec_slots_adopt(struct session *s, zs_error *err);

/* rec_report.c: what the recorder says (nothing with -q). */
void rec_say(const struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t rec_since_start_us(const struct session *s, uint64_t ns);
void rec_report_stats(const struct session *s, uint64_t now); /* -v, once a second */
/* The end report: a few lines, the details with -v; all of it is written
 * into the recording too (ZS_EV_REPORT events), for --info. */
int rec_report_end(const struct session *s, zs_error *err);
/* "N samples; nothing skipped or lost", or what was and why, for pid's
 * line (at the end, or when it goes). */
void rec_report_losses(const struct session *s, const slot *sl, char *buf, size_t len);

/* rec_bpf_sampler.c: the BPF sampler's side of each target (s->o->bpf). */
/* The kernel samples sl's main thread; with_stack: its records carry the
 * registers and a stack copy (rec_slot_wants_stack). */
int rec_bpf_sampler_add(struct session *s, slot *sl, int with_stack, zs_error *err);
void rec_bpf_sampler_remove(struct session *s, slot *sl);
/* Whether the loop must tick at the rate on the wall clock for the
 * off-CPU samples (the kernel side takes them when due), and that tick:
 * 1 when every thread looked at was on its CPU (rec_bpf_due's busy). */
int rec_bpf_sampler_due_hz(const struct session *s);
int rec_bpf_sampler_due(struct session *s);
/* Whether timers in the kernel make the looks' verdict: the loop then
 * looks at a thread only when a notice (its slot's due_noticed, set by the
 * feed) says one is due; the ring's descriptor wakes its wait for each
 * notice. */
int rec_bpf_sampler_watched(const struct session *s);
int rec_bpf_sampler_notice_fd(const struct session *s);
/* The look at sl's thread that its notice asked for. */
void rec_bpf_sampler_look(struct session *s, slot *sl);
/* At the end, off-CPU samples when due: the time away a thread still owes
 * (a period or more, which the looks found it on its CPU owing) paid where
 * it waits, by looks a moment apart until one finds it away, for at most
 * a moment. Short waits (a busy zeek's, a double's) end before the looks
 * their timers ask for: a short recording would otherwise lose up to a
 * few periods of its wall-clock time. The ticks' records meanwhile are
 * taken. -1 when the ring cannot be read. */
int rec_bpf_sampler_settle(struct session *s, zs_error *err);
/* The end report's line about the BPF sampler (detail: the -v line). -1
 * when its counters cannot be read; else for the summary line 1 when reads
 * failed or records were lost (worth saying without -v), 0 when not. */
int rec_bpf_sampler_describe(const struct session *s, int detail, char *buf, size_t len);

#endif
