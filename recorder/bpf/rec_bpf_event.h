/* SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0-only */
/* What the BPF sampler (zs_sampler.bpf.c) and its loader (rec_bpf.c) share:
 * the per-thread parameters user space puts in the slots map, the record
 * the kernel side sends through the ring buffer, and the counters. Included
 * by both sides, so fixed-size types only, no code, and no layout that
 * depends on the compiler (every member at its natural alignment, sizes
 * pinned by the static asserts in rec_bpf.c). */
#ifndef REC_BPF_EVENT_H
#define REC_BPF_EVENT_H

#include <linux/types.h>

/* Bounds of what one record carries; the kernel side sizes its buffers by
 * them and the loader refuses a layout beyond them. */
#define REC_BPF_MAX_FRAMES 128  /* CallInfo entries copied, the outermost */
#define REC_BPF_MAX_CALLINFO 32 /* bytes of one CallInfo */
#define REC_BPF_MAX_SPAN 64     /* bytes of one Frame copied (8.1+) */
/* The stack copy (native frames, ZAM's instruction): from the stack
 * pointer up, to the stack's base once user space knows it, page by page;
 * at most this much. */
#define REC_BPF_STACK_MAX (64 << 10)
#define REC_BPF_STACK_PAGE 4096
/* The user registers: x86-64's pt_regs, whose words are user_regs_struct's
 * first 21 (r15 .. ss). */
#define REC_BPF_REGS 21
/* sched_switch's filter: a bit for each tid modulo this (a power of 2). */
#define REC_BPF_TID_FILTER_BITS 4096

/* zs_model's values (common/zs_layout.h), which the kernel side cannot include. */
#define REC_BPF_MODEL_FRAME_STACK 1
#define REC_BPF_MODEL_CALLINFO_FRAME 2

/* A look's verdict (zs_due_run's return value, the byte zs_due prints),
 * bits: the thread was on its CPU; and owed a period or more of time away
 * all the same (the look at the end of a recording tries again:
 * rec_bpf_settle). */
#define REC_BPF_DUE_BUSY 1
#define REC_BPF_DUE_OWING 2
/* Looks at a thread found on its CPU (REC_BPF_DUE_BUSY) thin out: each
 * such look doubles the periods to the next, up to this many and no
 * further apart than this; one that finds it away goes back to every
 * period. The time away is paid all the same (the next look away credits
 * it), also when it owes a period or more: a busy zeek that leaves its CPU
 * for short waits (its log writers' queues) is then caught away a few
 * looks later, not hunted for at every period (most of its timers' runs
 * and the recorder's looks, each finding it on its CPU again). Both for
 * the recorder's own looks (rec_loop.c) and for the peeks of zs_due_arm's
 * timers. */
#define REC_BPF_LOOK_STRIDE_MAX 8
#define REC_BPF_LOOK_GAP_MAX_NS 250000000ULL

static inline __attribute__((always_inline)) __u32 rec_bpf_next_stride(__u32 stride, int busy,
                                                                       __u64 period_ns)
{
    /* No loop: a verifier walks each of its ways (6.12's for most of a
     * minute under emulation). */
    __u64 fit = period_ns ? REC_BPF_LOOK_GAP_MAX_NS / period_ns : 1;
    __u32 next = stride * 2 > REC_BPF_LOOK_STRIDE_MAX ? REC_BPF_LOOK_STRIDE_MAX : stride * 2;
    if (!busy || fit < 1)
        return 1;
    return next > fit ? (__u32)fit : next;
}

/* zs_due_run's context: the thread to look at. */
struct rec_bpf_due_args {
    __u32 tid;
    __u32 slot; /* zs_due_arm: the thread's slot */
};

/* What the kernel side reads for one thread: the addresses of zeek's
 * globals in that process and the layout's offsets it needs. */
typedef struct rec_bpf_params {
    __u32 pid;   /* the thread's process (tgid), as the host sees it */
    __u32 model; /* REC_BPF_MODEL_* */
    __u64 call_stack;
    __u64 frame_stack;  /* 0 in the callinfo-frame model */
    __s32 vector_begin;
    __s32 callinfo_size;
    __s32 callinfo_frame;  /* callinfo-frame model */
    __s32 frame_function;  /* callinfo-frame model */
    __s32 frame_next_stmt;
    __u32 max_frames;  /* at most REC_BPF_MAX_FRAMES */
    __u32 stack_bytes; /* the stack copy before its base is known; 0: no registers, no copy */
} rec_bpf_params;

/* The slots map's value: the parameters and what the loader derives
 * from them. */
typedef struct rec_bpf_target {
    rec_bpf_params p;
    __u64 period_ns;  /* a tick: 1e9 / hz of the thread's CPU time */
    __s32 frame_lo;   /* 8.1+: first byte of a Frame copied */
    __u32 frame_span; /* 8.1+: bytes of a Frame copied, 0 otherwise */
    __u64 stack_base; /* the copy ends here once known (0: p.stack_bytes from sp) */
    __u32 tid;        /* the thread (a tick checks it is the one it samples) */
    __u32 unused;
} rec_bpf_target;

enum rec_bpf_type {
    REC_BPF_ONCPU = 1,  /* a tick of the thread's CPU time */
    REC_BPF_OFFCPU = 2, /* read when it left the CPU, sent when it came back */
    REC_BPF_DUE_NOTICE = 3, /* zs_due_arm's timer: a look at this thread is due (no sample) */
};

enum rec_bpf_flags {
    REC_BPF_F_CUT = 1 << 0,       /* deeper than max_frames: the outermost were copied */
    REC_BPF_F_KERNEL = 1 << 1,    /* on-CPU: the tick landed in the kernel (a syscall) */
    REC_BPF_F_PREEMPTED = 1 << 2, /* off-CPU: it left runnable, waiting for a CPU */
    REC_BPF_F_STOPPED = 1 << 3,   /* off-CPU: it left stopped (a tracer's stop, SIGSTOP) */
    REC_BPF_F_REGS = 1 << 4,      /* regs hold the user registers; stack_len bytes follow */
    REC_BPF_F_STACK_SHORT = 1 << 5, /* a stack page could not be read: the copy ends before it */
};

/* Which read failed (bit positions; status has 1 << kind). A failed read
 * leaves its bytes zero: never a guess. */
enum rec_bpf_bad {
    REC_BPF_BAD_CALL_STACK = 0,  /* call_stack's vector header */
    REC_BPF_BAD_FRAME_STACK = 1, /* g_frame_stack's vector header */
    REC_BPF_BAD_SHAPE = 2,       /* a header that is no vector of its elements */
    REC_BPF_BAD_CALLINFO = 3,    /* the CallInfo array */
    REC_BPF_BAD_FS_TOP = 4,      /* g_frame_stack's top element */
    REC_BPF_BAD_NEXT_STMT = 5,   /* that Frame's next_stmt */
    REC_BPF_BAD_FRAME = 6,       /* 8.1+: a Frame's pointer or bytes */
    REC_BPF_BAD_REGS = 7,        /* the user registers (the script's reads stand: no native frames) */
    REC_BPF_BAD__COUNT = 8,
};

/* One record: this header, then n * callinfo_size bytes of CallInfo
 * (outermost first), then in the callinfo-frame model n * frame_span bytes,
 * the bytes [frame_lo, frame_lo + frame_span) of each CallInfo's Frame,
 * then stack_len bytes of the stack from regs' sp up. */
typedef struct rec_bpf_event {
    __u16 type;   /* rec_bpf_type */
    __u16 flags;  /* rec_bpf_flags */
    __u32 status; /* 1 << rec_bpf_bad of each read that failed */
    __u32 pid;
    __u32 tid;
    __u64 time_ns; /* CLOCK_MONOTONIC: the tick, or when the thread left */
    __u64 off_ns;  /* off-CPU: how long it was away */
    __u32 weight;  /* ticks of the period it stands for */
    __u32 cpu;     /* where it was read */
    __u64 cs[3];   /* call_stack: begin, end, end of storage */
    __u64 fs[3];   /* g_frame_stack (frame-stack model, n > 0), else 0 */
    __u64 fs_top;       /* g_frame_stack's top element */
    __u64 next_stmt;    /* its next_stmt */
    __u32 depth;        /* CallInfo entries call_stack had */
    __u32 n;            /* of them, copied */
    __u16 callinfo_size;
    __u16 frame_span;
    __s32 frame_lo;
    __u64 regs[REC_BPF_REGS]; /* REC_BPF_F_REGS: as the thread entered the kernel */
    __u32 stack_len;
    __u32 head_len; /* this header and the script's bytes: where the stack begins */
} rec_bpf_event;

/* Each CPU's counters (index into its value of the counters map;
 * rec_bpf_counters sums the CPUs). */
enum rec_bpf_counter {
    REC_BPF_C_TICKS = 0,     /* on-CPU records sent */
    REC_BPF_C_NOT_TARGET,    /* ticks of a thread no longer in the map */
    REC_BPF_C_LEAVES,        /* a target left the CPU: read into its slot */
    REC_BPF_C_OFFCPU,        /* off-CPU records sent */
    REC_BPF_C_OFFCPU_WEIGHT, /* their weights */
    REC_BPF_C_OFFCPU_SHORT,  /* returns shorter than the period owed (carried) */
    REC_BPF_C_RING_FULL,     /* records lost: the ring buffer was full */
    REC_BPF_C_TICK_NS,       /* REC_BPF_SELF_TIMING: time in the ticks */
    REC_BPF_C_LEAVE_NS,      /* REC_BPF_SELF_TIMING: time in the leaves */
    REC_BPF_C_RETURN_NS,     /* REC_BPF_SELF_TIMING: in the returns (offcpu + offcpu_short) */
    REC_BPF_C_STACK_SHORT,   /* stack copies cut at a page that could not be read */
    REC_BPF_C_DUE_ON_CPU,    /* due off-CPU samples of a thread found on its CPU (the ticks') */
    REC_BPF_C_DUE_RAN,       /* due off-CPU samples dropped: the thread ran while it was read */
    REC_BPF_C_WATCHES,       /* runs of zs_due_arm's timers (not in the kernel's program stats) */
    REC_BPF_C_WATCH_NS,      /* their time */
    REC_BPF_C_BAD,           /* reads that failed, REC_BPF_BAD__COUNT of them by kind */
    REC_BPF_C__COUNT = REC_BPF_C_BAD + REC_BPF_BAD__COUNT,
};

#endif
