/* SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0-only */
/* The kernel side of the BPF sampler: the same raw reads as the ptrace
 * stop window (rec_sampler.c and the models), taken without stopping zeek.
 *
 * zs_tick runs on a per-thread task-clock perf event, in the timer
 * interrupt on zeek's own CPU: zeek is not running while it reads, so the
 * copy is as consistent as a stopped thread's. zs_switch runs on every
 * context switch of the host: when a target thread leaves the CPU it reads
 * the same things into the thread's slot (zeek's context, its memory and
 * stack as they were), and when the thread comes back it sends that record,
 * weighed by the ticks of wall time it was away. zs_due, a trial, takes
 * the off-CPU samples instead when user space finds them due, with nothing
 * on anyone's switches.
 *
 * Reads never fault pages in: a page not resident fails the read, which is
 * flagged in the record and counted. User space does everything else.
 *
 * One object for every kernel from 5.8 on: what a kernel may lack (attach
 * cookies and bpf_task_pt_regs before 5.15) is behind a constant the
 * loader sets from its probes, and the verifier drops the branch it does
 * not take before it looks at the helpers there. Lengths are computed in
 * 64 bits and bounded where they are used: older verifiers lose the
 * bounds of a 32-bit product. */
#include "zs_kernel_types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rec_bpf_event.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define CI_REGION (REC_BPF_MAX_FRAMES * REC_BPF_MAX_CALLINFO) /* 4096, a power of 2 */
#define DATA_USED (CI_REGION + REC_BPF_MAX_FRAMES * REC_BPF_MAX_SPAN)
/* Offsets into data are masked with DATA_MASK so the verifier can bound
 * them; the slack behind it takes the last read at the largest offset. */
#define DATA_MASK 16383
#define DATA_SIZE (DATA_MASK + 1 + REC_BPF_MAX_SPAN)
_Static_assert((CI_REGION & (CI_REGION - 1)) == 0, "CallInfo region masks");
_Static_assert(DATA_USED <= DATA_MASK + 1, "data fits under the mask");
/* The stack copy follows the script's bytes in data (at an offset masked
 * with DATA_MASK), its pieces at offsets masked with STACK_MASK, a page at
 * most each: the record is then one run of bytes, sent with one copy. */
#define STACK_MASK (REC_BPF_STACK_MAX - 1)
#define STACK_PIECES (REC_BPF_STACK_MAX / REC_BPF_STACK_PAGE + 1)
#define RECORD_DATA (DATA_MASK + 1 + REC_BPF_STACK_MAX + REC_BPF_STACK_PAGE)
_Static_assert((REC_BPF_STACK_MAX & STACK_MASK) == 0, "the stack's room masks");
_Static_assert(DATA_SIZE <= RECORD_DATA, "the script's reads stay inside");

/* A record as built: the event, the script's bytes, the stack copy. */
struct record {
    rec_bpf_event ev;
    __u8 data[RECORD_DATA];
};

/* A thread's off-CPU slot: the record read when it left (zs_switch), or
 * when a sample was due (zs_due). */
struct offcpu {
    __u64 left_ns;
    __u64 carry_ns; /* wall time away not yet credited to a tick */
    __u32 pending;  /* rec is to be sent when the thread comes back */
    __u32 how;      /* how_left's flags */
    /* zs_due: the last look (the wall clock, the thread's CPU time then),
     * and the time away since not yet credited (negative where a CPU time
     * read late: the sums telescope). */
    __u64 looked_ns, looked_cpu_ns;
    __s64 owed_ns;
    __u32 noticed; /* zs_watch told user space a look is due; the look clears it */
    __u32 unused;
    struct record rec;
};

/* The targets by slot. A tick's slot is its perf event's attach cookie,
 * so that it needs no hash lookup: at 100 Hz everything a tick touches is
 * out of the caches, and each cold page costs it more than its reads. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 128); /* the loader sets it */
    __type(key, __u32);       /* slot */
    __type(value, rec_bpf_target);
} zs_slots SEC(".maps");

/* Each thread's off-CPU record, by slot (zeroed by the loader with each
 * target). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 128); /* the loader sets it */
    __type(key, __u32);       /* slot */
    __type(value, struct offcpu);
} zs_offcpu SEC(".maps");

/* Each target's slot by its tid: a context switch knows only the thread. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 128); /* the loader sets it */
    __type(key, __u32);       /* tid */
    __type(value, __u32);     /* slot */
} zs_slot_of SEC(".maps");

/* Each CPU's counters, a whole number of cache lines. A plain array
 * indexed by CPU rather than a per-CPU one: small, it lies in the kernel's
 * linear map (huge pages) where per-CPU map memory may not. */
struct percpu {
    __u64 counters[REC_BPF_C__COUNT];
} __attribute__((aligned(64)));

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1); /* the loader sets it: the CPUs */
    __type(key, __u32);
    __type(value, struct percpu);
} zs_counters SEC(".maps");

/* A tick's record that is a small one (script frames only, at most
 * SMALL_FRAMES of them in SMALL_CI_REGION bytes of CallInfo and SMALL_MASK
 * + 1 of data: 8 frames of 8.1+ or of the frame-stack model), built in the
 * ring buffer itself. Its size is fixed, so it is kept near what such a
 * stack needs: the ring holds about as many of them as of exact-size ones. */
#define SMALL_FRAMES 8
#define SMALL_CI_REGION 256
#define SMALL_MASK 511
#define SMALL_SIZE (SMALL_MASK + 1 + REC_BPF_MAX_SPAN)
_Static_assert(SMALL_FRAMES * REC_BPF_MAX_CALLINFO <= SMALL_CI_REGION &&
                   SMALL_CI_REGION + REC_BPF_MAX_CALLINFO <= SMALL_SIZE,
               "a small record's CallInfo and Frame pointer reads stay inside");
struct small_record {
    rec_bpf_event ev;
    __u8 data[SMALL_SIZE];
};

/* The tick's record under construction, one for each CPU (a per-CPU
 * array's value cannot be this large): the loader sizes it to the CPUs. A
 * tick never interrupts a switch on the same CPU (the scheduler runs with
 * interrupts off), and a switch uses its thread's own slot. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1); /* the loader sets it */
    __type(key, __u32);
    __type(value, struct record);
} zs_scratch SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4 << 20); /* the loader sets it */
} zs_ring SEC(".maps");

/* The threads sampled, by the low bits of their tids (the loader keeps it
 * so): a thread whose bit is clear is surely none of them. zs_slot_of
 * decides for the others. */
#define TID_FILTER_BITS 4096
__u64 zs_tid_filter[TID_FILTER_BITS / 64];
_Static_assert(TID_FILTER_BITS == REC_BPF_TID_FILTER_BITS, "the loader's filter");

static __always_inline int maybe_target(__u32 tid)
{
    return tid && ((zs_tid_filter[(tid / 64) % (TID_FILTER_BITS / 64)] >> (tid % 64)) & 1);
}

/* Set by the loader before the load (the verifier then drops the code it
 * guards when 0): the tick and the leave time themselves, into counters. */
const volatile __u32 zs_self_timing = 0;
/* What the running kernel offers, as the loader probed it: a perf event's
 * attach cookie (5.15), and bpf_task_pt_regs with
 * bpf_get_current_task_btf (5.15, 5.11). */
const volatile __u32 zs_have_cookie = 0;
const volatile __u32 zs_have_task_pt_regs = 0;
/* The ring's fill at which a record wakes user space (the loader sets it:
 * a quarter of the ring). */
const volatile __u64 zs_ring_wake_bytes = 0;

static __always_inline struct percpu *this_cpu(void)
{
    __u32 cpu = bpf_get_smp_processor_id();
    return bpf_map_lookup_elem(&zs_counters, &cpu);
}

/* A read that failed: flagged in the record, counted once it is taken. */
static __always_inline void bad(rec_bpf_event *ev, __u32 kind)
{
    ev->status |= 1u << kind;
}

static __always_inline void count_bad(__u64 *counters, __u32 status)
{
    if (!status)
        return;
    for (__u32 k = 0; k < REC_BPF_BAD__COUNT; k++)
        counters[REC_BPF_C_BAD + k] += (status >> k) & 1;
}

/* A read of zeek's memory: from the current task's (from NULL: a tick, a
 * leave), or from task from's, which may sleep to fault a page in (an
 * off-CPU sample when due, a sleepable program). */
static __always_inline int read_user(struct task_struct *from, void *dst, __u64 size, __u64 addr)
{
    if (from)
        return bpf_copy_from_user_task(dst, size, (const void *)addr, from, 0);
    return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* 8.1+: for each CallInfo, the bytes [lo, lo + span) of its Frame, into
 * data (CallInfo first, then the Frames' bytes; offsets masked by ci_mask
 * and data_mask, constants, so that the verifier bounds them). A plain
 * bounded loop (not bpf_loop, 5.17+): kernels from 5.8 accept it. */
static __always_inline int read_frames(struct task_struct *from, const rec_bpf_target *t, __u8 *data,
                                       __u32 n, __u64 ci_bytes, __u32 max_frames, __u64 ci_mask,
                                       __u64 data_mask)
{
    const __u64 ci_size = (__u32)t->p.callinfo_size, ci_frame = (__u32)t->p.callinfo_frame;
    const __u64 span = t->frame_span;
    const __u64 lo = (__u64)(__s64)t->frame_lo;
    int failed = 0;
    if (span > REC_BPF_MAX_SPAN)
        return 1;
    for (__u64 i = 0; i < max_frames; i++) {
        if (i >= n)
            break;
        /* 6.1's verifier loses the bound checked above once span is spilled
         * to the stack: masked again here (the compiler may not drop the
         * mask, which does not change the value: span <= REC_BPF_MAX_SPAN). */
        __u64 len = span;
        asm volatile("" : "+r"(len));
        len &= 2 * REC_BPF_MAX_SPAN - 1;
        __u64 frame = *(__u64 *)(data + ((i * ci_size + ci_frame) & ci_mask));
        /* A null or unaligned Frame pointer is read all the same (it fails
         * or gives bytes no one trusts): the flag is what counts. Without
         * branches, so the verifier walks one path an iteration. */
        failed |= (frame == 0) | ((frame & 7) != 0) |
                  (read_user(from, data + ((ci_bytes + i * span) & data_mask), len, frame + lo) != 0);
    }
    return failed;
}

/* The user registers of task, saved at the top of its kernel stack as it
 * entered the kernel (a syscall, or the interrupt of this very tick), into
 * regs. -1 when they cannot be read, or are not a 64-bit task's user
 * registers (a guess of where they lie that missed). */
static __always_inline int user_regs(struct task_struct *task, __u64 *regs)
{
    const void *at;
    if (zs_have_task_pt_regs)
        at = (const void *)bpf_task_pt_regs(task);
    else
        at = (const __u8 *)BPF_CORE_READ(task, stack) + ZS_THREAD_SIZE - ZS_PT_REGS_SIZE;
    if (bpf_probe_read_kernel(regs, REC_BPF_REGS * 8, at))
        return -1;
    return regs[ZS_REG_CS] == ZS_USER_CS && regs[ZS_REG_SS] == ZS_USER_SS ? 0 : -1;
}

/* The user registers of task (user_regs) and its stack from their sp up, as
 * the ptrace sampler sizes it (rec_stack_copy_size): to the end of the
 * base's page once user space knows the base, else stack_bytes. Page by
 * page, so that a page not in memory ends the copy there and the frames
 * below it still unwind. After the script reads, and with what it found
 * kept in the record, not in registers: the verifier then walks what
 * follows once, not once for each way through the copy (a second). */
static __always_inline void copy_stack(struct task_struct *from, const rec_bpf_target *t,
                                       struct record *r, struct task_struct *task)
{
    rec_bpf_event *ev = &r->ev;
    const __u64 page = REC_BPF_STACK_PAGE;
    ev->stack_len = 0;
    if (!t->p.stack_bytes)
        return;
    if (user_regs(task, ev->regs)) {
        bad(ev, REC_BPF_BAD_REGS);
        return;
    }
    ev->flags |= REC_BPF_F_REGS;
    /* The copy goes right after the script's bytes (read_body's head_len). */
    __u8 *stack = r->data + ((ev->head_len - sizeof *ev) & DATA_MASK);
    __u64 sp = ev->regs[ZS_REG_SP], base = t->stack_base, end = sp + t->p.stack_bytes;
    if (base > sp && base - sp <= REC_BPF_STACK_MAX - page)
        end = (base + page - 1) & ~(page - 1);
    __u64 at = sp;
    for (__u32 i = 0; i < STACK_PIECES; i++) {
        if (at >= end)
            break;
        __u64 next = (at & ~(page - 1)) + page;
        if (next > end)
            next = end;
        __u64 len = next - at;
        if (len == 0 || len > page)
            break;
        if (read_user(from, stack + (ev->stack_len & STACK_MASK), len, at)) {
            ev->flags |= REC_BPF_F_STACK_SHORT;
            break;
        }
        ev->stack_len += len;
        at = next;
    }
}

/* The stop window's first script read, into ev: call_stack's vector
 * (not network_time: a page away, it would cost every tick a cold page;
 * user space reads it once a second). Returns how many of its CallInfo
 * entries to copy (the outermost: they name the event being handled), 0
 * when none. */
static __always_inline __u32 read_head(struct task_struct *from, const rec_bpf_target *t,
                                       rec_bpf_event *ev)
{
    const __u64 ci_size = (__u32)t->p.callinfo_size; /* the loader checked: 8..32 */
    const int frame_stack = t->p.model == REC_BPF_MODEL_FRAME_STACK;

    ev->status = 0;
    ev->flags = 0;
    ev->depth = ev->n = 0;
    ev->fs[0] = ev->fs[1] = ev->fs[2] = 0;
    ev->fs_top = ev->next_stmt = 0;
    ev->callinfo_size = ci_size;
    ev->frame_span = frame_stack ? 0 : t->frame_span;
    ev->frame_lo = t->frame_lo;
    ev->stack_len = 0;
    ev->head_len = sizeof *ev;

    if (read_user(from, ev->cs, sizeof ev->cs, t->p.call_stack + t->p.vector_begin)) {
        bad(ev, REC_BPF_BAD_CALL_STACK);
        return 0;
    }
    __u64 begin = ev->cs[0], end = ev->cs[1];
    if (end < begin || (end - begin) % ci_size) {
        bad(ev, REC_BPF_BAD_SHAPE);
        return 0;
    }
    __u64 depth = (end - begin) / ci_size;
    ev->depth = depth > 0xffffffffULL ? 0xffffffffU : (__u32)depth;
    __u32 max = t->p.max_frames;
    if (max > REC_BPF_MAX_FRAMES)
        max = REC_BPF_MAX_FRAMES;
    __u32 n = depth < max ? (__u32)depth : max;
    if (n < depth)
        ev->flags |= REC_BPF_F_CUT;
    return n;
}

/* The rest of the script reads, the n CallInfo entries read_head counted
 * (and their Frames' bytes, or the frame-stack model's innermost
 * next_stmt), into data: at most max_frames of them, offsets masked as in
 * read_frames. Sets ev's n and head_len (the bytes of the record's head to
 * send). */
static __always_inline void read_body(struct task_struct *from, const rec_bpf_target *t,
                                      rec_bpf_event *ev, __u8 *data, __u32 n,
                                      __u32 max_frames, __u64 ci_mask, __u64 data_mask)
{
    const __u64 ci_size = (__u32)t->p.callinfo_size;
    __u64 ci_bytes = n * ci_size;
    if (n == 0 || n > max_frames || ci_bytes > ci_mask + 1)
        return;
    if (read_user(from, data, ci_bytes, ev->cs[0])) {
        bad(ev, REC_BPF_BAD_CALLINFO);
        return;
    }
    ev->n = n;

    if (t->p.model != REC_BPF_MODEL_FRAME_STACK) {
        if (read_frames(from, t, data, n, ci_bytes, max_frames, ci_mask, data_mask))
            bad(ev, REC_BPF_BAD_FRAME);
        ev->head_len = sizeof *ev + ci_bytes + n * t->frame_span;
        return;
    }
    ev->head_len = sizeof *ev + ci_bytes;
    /* The innermost Frame's next_stmt, as read_frames in
     * rec_model_frame_stack.c. */
    if (read_user(from, ev->fs, sizeof ev->fs, t->p.frame_stack + t->p.vector_begin)) {
        bad(ev, REC_BPF_BAD_FRAME_STACK);
    } else if (ev->fs[1] < ev->fs[0] || ((ev->fs[1] - ev->fs[0]) & 7)) {
        bad(ev, REC_BPF_BAD_SHAPE);
    } else if (ev->fs[1] > ev->fs[0]) {
        if (read_user(from, &ev->fs_top, 8, ev->fs[1] - 8))
            bad(ev, REC_BPF_BAD_FS_TOP);
        else if (ev->fs_top &&
                 read_user(from, &ev->next_stmt, 8, ev->fs_top + (__u64)(__s64)t->p.frame_next_stmt))
            bad(ev, REC_BPF_BAD_NEXT_STMT);
    }
}

/* The stop window's reads of task, into r: the script's, then the
 * registers and the stack (see copy_stack). from as in read_user. */
static __always_inline void take(struct task_struct *from, const rec_bpf_target *t, struct record *r,
                                 struct task_struct *task)
{
    __u32 n = read_head(from, t, &r->ev);
    read_body(from, t, &r->ev, r->data, n, REC_BPF_MAX_FRAMES, CI_REGION - 1, DATA_MASK);
    copy_stack(from, t, r, task);
}

/* No wake-up for a record: user space polls on its own clock, as seldom
 * as once a second or less. But many targets' records (each with its stack
 * copy) can fill the ring before then: past a quarter of it, each record
 * wakes user space to take them. */
static __always_inline __u64 wake_flag(void)
{
    return bpf_ringbuf_query(&zs_ring, BPF_RB_AVAIL_DATA) >= zs_ring_wake_bytes ? BPF_RB_FORCE_WAKEUP
                                                                                 : BPF_RB_NO_WAKEUP;
}

/* The record's head and its stack copy, one run of bytes, into the ring
 * with one copy (a size known at run time, bounded: 5.8 on). */
static __always_inline void send(__u64 *counters, struct record *r)
{
    __u64 len = (__u64)r->ev.head_len + r->ev.stack_len;
    if (len < sizeof r->ev || len > sizeof *r)
        return;
    if (bpf_ringbuf_output(&zs_ring, r, len, wake_flag()))
        counters[REC_BPF_C_RING_FULL]++;
}

/* A small record (script frames only, at most SMALL_FRAMES of them: most
 * ticks) is built in the ring buffer itself, its head on the BPF stack,
 * which is warm: at 100 Hz each cold page costs a tick more than its reads
 * do, and this path touches no scratch record. */
static __always_inline void send_small(const rec_bpf_target *t, rec_bpf_event *ev, __u32 n,
                                       __u64 *counters)
{
    if (n == 0) {
        if (bpf_ringbuf_output(&zs_ring, ev, sizeof *ev, wake_flag()))
            counters[REC_BPF_C_RING_FULL]++;
        return;
    }
    struct small_record *r = bpf_ringbuf_reserve(&zs_ring, sizeof *r, 0);
    if (!r) {
        counters[REC_BPF_C_RING_FULL]++;
        return;
    }
    read_body(NULL, t, ev, r->data, n, SMALL_FRAMES, SMALL_CI_REGION - 1, SMALL_MASK);
    __builtin_memcpy(&r->ev, ev, sizeof *ev);
    bpf_ringbuf_submit(r, wake_flag());
}

/* One tick: 1/hz of the thread's CPU time (the weight is always 1: the
 * loader can tell the thread's CPU time from its perf event, should a late
 * timer have swallowed a tick). The perf event is the thread's own: its
 * cookie is the thread's slot. */
SEC("perf_event")
int zs_tick(void *ctx)
{
    __u64 now = bpf_ktime_get_ns();
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id, cpu = bpf_get_smp_processor_id();
    struct percpu *c = bpf_map_lookup_elem(&zs_counters, &cpu);
    if (!c)
        return 0;
    __u32 slot;
    if (zs_have_cookie) {
        slot = (__u32)bpf_get_attach_cookie(ctx);
    } else {
        __u32 *of = bpf_map_lookup_elem(&zs_slot_of, &tid);
        if (!of) {
            c->counters[REC_BPF_C_NOT_TARGET]++;
            return 0;
        }
        slot = *of;
    }
    rec_bpf_target *t = bpf_map_lookup_elem(&zs_slots, &slot);
    if (!t)
        return 0;
    if (t->tid != tid || t->p.pid != (__u32)(id >> 32)) {
        c->counters[REC_BPF_C_NOT_TARGET]++;
        return 0;
    }

    rec_bpf_event head;
    __builtin_memset(&head, 0, sizeof head);
    head.type = REC_BPF_ONCPU;
    head.pid = t->p.pid;
    head.tid = tid;
    head.time_ns = now;
    head.weight = 1;
    head.cpu = cpu;
    __u32 n = read_head(NULL, t, &head);
    /* The context is the interrupted registers (pt_regs): a whole-word
     * load, at the same place on every kernel. */
    if ((((volatile __u64 *)ctx)[ZS_REG_CS] & 3) == 0)
        head.flags |= REC_BPF_F_KERNEL;
    rec_bpf_event *ev = &head;
    const __u64 ci_size = (__u32)t->p.callinfo_size, span = head.frame_span;
    if (t->p.stack_bytes == 0 && n <= SMALL_FRAMES && n * (ci_size + span) <= SMALL_MASK + 1) {
        send_small(t, &head, n, c->counters);
    } else {
        struct record *r = bpf_map_lookup_elem(&zs_scratch, &cpu);
        if (!r)
            return 0;
        __builtin_memcpy(&r->ev, &head, sizeof head);
        read_body(NULL, t, &r->ev, r->data, n, REC_BPF_MAX_FRAMES, CI_REGION - 1, DATA_MASK);
        copy_stack(NULL, t, r, zs_have_task_pt_regs ? bpf_get_current_task_btf()
                                              : (struct task_struct *)bpf_get_current_task());
        ev = &r->ev;
        send(c->counters, r);
    }
    c->counters[REC_BPF_C_TICKS]++;
    c->counters[REC_BPF_C_STACK_SHORT] += (ev->flags & REC_BPF_F_STACK_SHORT) != 0;
    count_bad(c->counters, ev->status);
    if (zs_self_timing)
        c->counters[REC_BPF_C_TICK_NS] += bpf_ktime_get_ns() - now;
    return 0;
}

/* How t left the CPU, as record flags: runnable (preempted, waiting for a
 * CPU), stopped (a tracer's stop, SIGSTOP), or 0: to wait for something. */
static __always_inline __u16 how_left(struct task_struct *t)
{
    long state;
    if (bpf_core_field_exists(t->__state))
        state = t->__state;
    else
        state = ((struct task_struct___old *)t)->state;
    if (state == 0)
        return REC_BPF_F_PREEMPTED;
    return state & (0x4 /* __TASK_STOPPED */ | 0x8 /* __TASK_TRACED */) ? REC_BPF_F_STOPPED : 0;
}

/* Thread tid of process pid: its target and its off-CPU record, or 0 when
 * it is none of ours. */
static __always_inline int target_of(__u32 tid, __u32 pid, rec_bpf_target **t, struct offcpu **s)
{
    __u32 *slot = bpf_map_lookup_elem(&zs_slot_of, &tid);
    if (!slot)
        return 0;
    *t = bpf_map_lookup_elem(&zs_slots, slot);
    *s = bpf_map_lookup_elem(&zs_offcpu, slot);
    return *t && *s && (*t)->p.pid == pid;
}

/* prev leaves the CPU; this runs in its context (current is prev), so its
 * memory and stack are as it left them. */
static __always_inline void leave(struct task_struct *prev, __u32 tid)
{
    __u64 start = zs_self_timing ? bpf_ktime_get_ns() : 0;
    rec_bpf_target *t;
    struct offcpu *s;
    if (!target_of(tid, (__u32)prev->tgid, &t, &s) || (prev->flags & 0x4 /* PF_EXITING */))
        return;
    struct percpu *c = this_cpu();
    if (!c)
        return;
    __u64 now = bpf_ktime_get_ns();
    take(NULL, t, &s->rec, prev);
    s->pending = 1;
    s->rec.ev.cpu = bpf_get_smp_processor_id();
    s->left_ns = now;
    s->how = how_left(prev);
    c->counters[REC_BPF_C_LEAVES]++;
    c->counters[REC_BPF_C_STACK_SHORT] += (s->rec.ev.flags & REC_BPF_F_STACK_SHORT) != 0;
    count_bad(c->counters, s->rec.ev.status);
    if (zs_self_timing)
        c->counters[REC_BPF_C_LEAVE_NS] += bpf_ktime_get_ns() - start;
}

/* next comes back; this runs in the previous task's context: no reads of
 * zeek's memory here, only the record its leave took. */
static __always_inline void come_back(struct task_struct *next, __u32 tid)
{
    __u64 start = zs_self_timing ? bpf_ktime_get_ns() : 0;
    rec_bpf_target *t;
    struct offcpu *s;
    if (!target_of(tid, (__u32)next->tgid, &t, &s) || !t->period_ns || !s->pending)
        return;
    struct percpu *c = this_cpu();
    if (!c)
        return;
    s->pending = 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 away = now - s->left_ns;
    __u64 d = away + s->carry_ns;
    __u64 weight = d / t->period_ns;
    s->carry_ns = d - weight * t->period_ns;
    if (!weight) {
        c->counters[REC_BPF_C_OFFCPU_SHORT]++;
        if (zs_self_timing)
            c->counters[REC_BPF_C_RETURN_NS] += bpf_ktime_get_ns() - start;
        return;
    }
    rec_bpf_event *ev = &s->rec.ev;
    ev->type = REC_BPF_OFFCPU;
    ev->flags |= s->how;
    ev->pid = t->p.pid;
    ev->tid = tid;
    ev->time_ns = s->left_ns;
    ev->off_ns = away;
    ev->weight = weight > 0xffffffffULL ? 0xffffffffU : (__u32)weight;
    send(c->counters, &s->rec);
    c->counters[REC_BPF_C_OFFCPU]++;
    c->counters[REC_BPF_C_OFFCPU_WEIGHT] += weight;
    if (zs_self_timing)
        c->counters[REC_BPF_C_RETURN_NS] += bpf_ktime_get_ns() - start;
}

/* Every context switch of the host: the common case, neither task a
 * target, costs two loads from the filter and nothing else. */
SEC("tp_btf/sched_switch")
int BPF_PROG(zs_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    __u32 prev_tid = prev->pid, next_tid = next->pid;
    if (maybe_target(prev_tid))
        leave(prev, prev_tid);
    if (maybe_target(next_tid))
        come_back(next, next_tid);
    return 0;
}

/* Off-CPU samples when due (6.1 on; zs_switch before): user space runs
 * this for each target thread at the wall clock's ticks (jittered; fewer
 * while the looks find the thread on its CPU: rec_loop.c),
 * on its own CPU; nothing runs at anyone's switches. A look that finds the
 * thread away from its CPU stands for the wall time since the last look (a
 * late look loses nothing), paid in samples of the stack it waits in; one
 * that finds it on a CPU leaves the time to the ticks. A thread away has
 * not changed its registers or stack since it left: they are read now, from
 * its saved user registers, with reads that may sleep (they fault pages in,
 * and hold zeek's mmap_lock for reading meanwhile). Its switch count, the
 * same before and after with the thread away both times, proves that it did
 * not run in between: the reads are whole. */
/* Whether task, waiting for a CPU, waits for this one because we took it
 * from it: it left when we came (the run queue's clock stamps both). It
 * ran when the sample was due; one that waited behind another task before
 * we came is off-CPU time. */
static __always_inline int preempted_by_us(struct task_struct *task, __u32 cpu)
{
    struct task_struct *self = bpf_get_current_task_btf();
    return task->thread_info.cpu == cpu && task->se.exec_start >= self->se.exec_start;
}

/* A look at task: its off-CPU sample when one is due. Returns
 * REC_BPF_DUE_BUSY when it was on its CPU, REC_BPF_DUE_OWING when it owes
 * a period or more of time away all the same (also when it ran while its
 * stack was read), else 0. */
static __always_inline int due_look(struct task_struct *task)
{
    rec_bpf_target *t;
    struct offcpu *s;
    if (!target_of((__u32)task->pid, (__u32)task->tgid, &t, &s) || !t->period_ns)
        return 0;
    struct percpu *c = this_cpu();
    if (!c)
        return 0;
    __u64 now = bpf_ktime_get_ns(), looked = s->looked_ns;
    __u64 cpu_ns = task->se.sum_exec_runtime, looked_cpu = s->looked_cpu_ns;
    s->noticed = 0;
    s->looked_ns = now;
    s->looked_cpu_ns = cpu_ns;
    if (!looked)
        return 0;
    /* Away since the last look: its wall time less the CPU time (the ticks'). */
    __s64 owed = s->owed_ns + (__s64)(now - looked) - (__s64)(cpu_ns - looked_cpu);
    s->owed_ns = owed;
    /* Counted with atomics: a tick may interrupt this on the same CPU. */
    __u32 cpu = bpf_get_smp_processor_id();
    __u16 how = how_left(task);
    if (task->on_cpu || (how == REC_BPF_F_PREEMPTED && preempted_by_us(task, cpu))) {
        __sync_fetch_and_add(&c->counters[REC_BPF_C_DUE_ON_CPU], 1);
        /* Time away still to pay is paid at the next look that finds it
         * away (rec_bpf_event.h: REC_BPF_LOOK_STRIDE_MAX). */
        return REC_BPF_DUE_BUSY | (owed >= (__s64)t->period_ns ? REC_BPF_DUE_OWING : 0);
    }
    if (owed < (__s64)t->period_ns) {
        __sync_fetch_and_add(&c->counters[REC_BPF_C_OFFCPU_SHORT], 1);
        return 0;
    }
    __u64 switches = task->nvcsw + task->nivcsw;
    take(task, t, &s->rec, task);
    if (task->on_cpu || task->nvcsw + task->nivcsw != switches) {
        __sync_fetch_and_add(&c->counters[REC_BPF_C_DUE_RAN], 1);
        return REC_BPF_DUE_OWING;
    }
    __u64 weight = (__u64)owed / t->period_ns;
    s->owed_ns = owed - (__s64)(weight * t->period_ns);
    rec_bpf_event *ev = &s->rec.ev;
    ev->type = REC_BPF_OFFCPU;
    ev->flags |= how;
    ev->pid = t->p.pid;
    ev->tid = t->tid;
    ev->off_ns = weight * t->period_ns;
    ev->time_ns = now - ev->off_ns;
    ev->weight = weight > 0xffffffffULL ? 0xffffffffU : (__u32)weight;
    ev->cpu = cpu;
    send(c->counters, &s->rec);
    __sync_fetch_and_add(&c->counters[REC_BPF_C_OFFCPU], 1);
    __sync_fetch_and_add(&c->counters[REC_BPF_C_OFFCPU_WEIGHT], weight);
    if (ev->flags & REC_BPF_F_STACK_SHORT)
        __sync_fetch_and_add(&c->counters[REC_BPF_C_STACK_SHORT], 1);
    for (__u32 k = 0; k < REC_BPF_BAD__COUNT; k++)
        if ((ev->status >> k) & 1)
            __sync_fetch_and_add(&c->counters[REC_BPF_C_BAD + k], 1);
    return 0;
}

/* The look as a task iterator of one thread (6.1): user space creates,
 * reads and closes an iterator for each look, tens of microseconds. */
SEC("iter.s/task")
int zs_due(struct bpf_iter__task *ctx)
{
    struct task_struct *task = ctx->task;
    /* The verdict, to the reader of the iterator: one byte, when not 0. */
    char verdict = task ? (char)due_look(task) : 0;
    if (verdict)
        bpf_seq_write(ctx->meta->seq, &verdict, 1);
    return 0;
}

/* The look run by BPF_PROG_RUN with the thread's tid (bpf_task_from_pid:
 * 6.2; the loader tries it first): one system call, a few microseconds. */
extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

SEC("syscall")
int zs_due_run(struct rec_bpf_due_args *a)
{
    struct task_struct *task = bpf_task_from_pid((__s32)a->tid);
    if (!task)
        return 0;
    int verdict = due_look(task);
    bpf_task_release(task);
    return verdict;
}

/* The looks' verdict in the kernel (zs_due_arm: where the kernel has BPF
 * timers and lets a timer's callback take a task by its pid; 6.12 and 6.18 here):
 * a timer a target thread, at the rate (jittered), peeks at the thread
 * and wakes user space only when a look would take a sample, the thread
 * away owing a period or more. User space then looks (zs_due_run) as
 * before. A busy zeek owes little: no wake-up of the recorder for the
 * looks that would find it on its CPU. The callback cannot take the
 * sample itself: it may not sleep, and the stack read may. Peeks that
 * find the thread on its CPU thin out as the recorder's looks do
 * (rec_bpf_next_stride). */
struct watch {
    struct bpf_timer timer;
    __u32 slot;
    __u32 tid;    /* the thread it was armed for: another in the slot stops it */
    __u32 stride; /* periods to the next peek */
    __u32 unused;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 128); /* the loader sets it */
    __type(key, __u32);       /* slot */
    __type(value, struct watch);
} zs_watches SEC(".maps");

/* Whether a look at task would take a sample now: away from its CPU
 * (waiting, or runnable and waiting for one) owing a period or more of
 * time away. *busy: on its CPU. */
static __always_inline int look_due(struct task_struct *task, const rec_bpf_target *t,
                                    const struct offcpu *s, int *busy)
{
    *busy = 0;
    if (!s->looked_ns)
        return 1; /* the first look sets the clocks */
    __s64 owed = s->owed_ns + (__s64)(bpf_ktime_get_ns() - s->looked_ns) -
                 (__s64)(task->se.sum_exec_runtime - s->looked_cpu_ns);
    if (task->on_cpu) {
        *busy = 1;
        return 0;
    }
    return owed >= (__s64)t->period_ns;
}

static int watch_fired(void *map, __u32 *key, struct watch *w)
{
    /* Timed always: a timer's run is in none of the kernel's program
     * stats, and its cost is the reason it exists. */
    __u64 start = bpf_ktime_get_ns();
    __u32 slot = w->slot;
    rec_bpf_target *t = bpf_map_lookup_elem(&zs_slots, &slot);
    struct offcpu *s = bpf_map_lookup_elem(&zs_offcpu, &slot);
    if (!t || !s || t->tid != w->tid || !t->period_ns)
        return 0; /* the thread was removed: not armed again */
    struct task_struct *task = bpf_task_from_pid((__s32)w->tid);
    if (!task)
        return 0; /* gone */
    int busy;
    int due = look_due(task, t, s, &busy);
    bpf_task_release(task);
    if (due && !s->noticed) {
        rec_bpf_event *ev = bpf_ringbuf_reserve(&zs_ring, sizeof *ev, 0);
        if (ev) {
            __builtin_memset(ev, 0, sizeof *ev);
            ev->type = REC_BPF_DUE_NOTICE;
            ev->pid = t->p.pid;
            ev->tid = w->tid;
            s->noticed = 1;
            bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
        }
    }
    w->stride = rec_bpf_next_stride(w->stride, busy, t->period_ns);
    /* Uniform in [gap / 2, 3 gap / 2): no beat with zeek's timers. */
    __u64 gap = w->stride * t->period_ns;
    bpf_timer_start(&w->timer, gap / 2 + bpf_get_prandom_u32() % (gap | 1), 0);
    struct percpu *c = this_cpu();
    if (c) {
        c->counters[REC_BPF_C_WATCHES]++;
        c->counters[REC_BPF_C_WATCH_NS] += bpf_ktime_get_ns() - start;
    }
    return 0;
}

/* Arms slot's watch for thread tid (run by BPF_PROG_RUN as the thread is
 * added). 0 when armed. */
SEC("syscall")
int zs_due_arm(struct rec_bpf_due_args *a)
{
    __u32 slot = a->slot;
    struct watch *w = bpf_map_lookup_elem(&zs_watches, &slot);
    rec_bpf_target *t = bpf_map_lookup_elem(&zs_slots, &slot);
    if (!w || !t || !t->period_ns)
        return 1;
    w->slot = slot;
    w->tid = a->tid;
    w->stride = 1;
    long rc = bpf_timer_init(&w->timer, &zs_watches, 1 /* CLOCK_MONOTONIC */);
    if (rc && rc != -16 /* -EBUSY: armed before, for the slot's last thread */)
        return 2;
    if (bpf_timer_set_callback(&w->timer, watch_fired))
        return 3;
    return bpf_timer_start(&w->timer, t->period_ns, 0) ? 4 : 0;
}
