/* SPDX-License-Identifier: BSD-3-Clause */
#include "bpf/rec_bpf.h"
#include "frames/rec_raw_sample.h"
#include "targets/rec_access.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "zs_sampler.skel.h"

_Static_assert(sizeof(rec_bpf_event) == 296, "rec_bpf_event is laid out alike on both sides");
_Static_assert(sizeof(rec_bpf_params) == 56, "rec_bpf_params is laid out alike on both sides");
_Static_assert(sizeof(rec_bpf_target) == 88, "rec_bpf_target is laid out alike on both sides");
_Static_assert((int)REC_BPF_MODEL_FRAME_STACK == (int)ZS_MODEL_FRAME_STACK &&
                   (int)REC_BPF_MODEL_CALLINFO_FRAME == (int)ZS_MODEL_CALLINFO_FRAME,
               "the kernel side's model numbers are zs_model's");

enum {
    MAX_TARGETS = 128,           /* threads sampled at once (the maps' size) */
    RING_BYTES = 4 << 20,        /* at least: a second of 1 kHz ticks of 32 deep 8.1+ stacks, 4 times over */
    MAX_RING_BYTES = 64 << 20,
    /* Ring a CPU and hertz: a CPU busy with a target sends a record a
     * tick, its stack copy up to about 8 KiB; a quarter of a second of
     * them may come while the recorder, woken by the fill, is busy
     * elsewhere (its wait for the unwinder's answers, a poll's budget). */
    RING_BYTES_PER_CPU_HZ = 2 << 10,
    SMALL_RING_BYTES = 512 << 10, /* for the tests: filled between two polls */
    MAX_OFFSET = 4096,           /* of a member the kernel side reads */
};

typedef struct target {
    pid_t tid;
    uint32_t slot;         /* in zs_slots: the perf event's cookie */
    rec_bpf_target value; /* as in its slot of zs_slots */
    int perf_fd;           /* the link closes it */
    struct bpf_link *link;
    struct bpf_link *due;  /* off-CPU samples when due: zs_due on this thread alone */
    int owing;             /* rec_bpf_settle: the last look found it on its CPU, owing */
} target;

struct rec_bpf {
    struct zs_sampler *skel;
    struct ring_buffer *ring;
    uint64_t period_ns;
    int ncpus;
    target targets[MAX_TARGETS];
    size_t ntargets;
    uint64_t malformed;
    /* What the running kernel offers (zs_sampler.bpf.c's zs_have_*), and
     * how off-CPU samples are taken. */
    int have_cookie, have_task_pt_regs;
    rec_bpf_offcpu offcpu;
    char due_refused[200]; /* why not when due, where the kernel said */
    int due_run;           /* the looks by BPF_PROG_RUN (zs_due_run), not task iterators */
    char due_run_refused[200]; /* why not by BPF_PROG_RUN, where the kernel said */
    int watch;             /* the looks' verdict in the kernel (zs_due_arm's timers) */
    char watch_refused[200]; /* why not, where the kernel said */
    /* The poll under way. */
    rec_bpf_cb cb;
    void *cb_ctx;
    int handed;
    int enough; /* the callback stopped the poll */
};

/* libbpf prints through one global hook: kept quiet unless asked (then
 * its warnings whole, the verifier's log of a refused program included),
 * with its first warning of a failed open kept for the reason. */
static int verbose;
static char first_warning[256];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level != LIBBPF_WARN)
        return 0;
    if (verbose) {
        va_list copy;
        va_copy(copy, ap);
        vfprintf(stderr, fmt, copy);
        va_end(copy);
    }
    if (!first_warning[0]) {
        vsnprintf(first_warning, sizeof first_warning, fmt, ap);
        first_warning[strcspn(first_warning, "\n")] = '\0';
    }
    return 0;
}

void rec_bpf_set_verbose(int v)
{
    verbose = v;
    libbpf_set_print(libbpf_print);
}

static const char *const counter_names[REC_BPF_C__COUNT] = {
    [REC_BPF_C_TICKS] = "ticks",
    [REC_BPF_C_NOT_TARGET] = "not_target",
    [REC_BPF_C_LEAVES] = "leaves",
    [REC_BPF_C_OFFCPU] = "offcpu",
    [REC_BPF_C_OFFCPU_WEIGHT] = "offcpu_weight",
    [REC_BPF_C_OFFCPU_SHORT] = "offcpu_short",
    [REC_BPF_C_RING_FULL] = "ring_full",
    [REC_BPF_C_TICK_NS] = "tick_ns",
    [REC_BPF_C_LEAVE_NS] = "leave_ns",
    [REC_BPF_C_RETURN_NS] = "return_ns",
    [REC_BPF_C_STACK_SHORT] = "stack_short",
    [REC_BPF_C_DUE_ON_CPU] = "due_on_cpu",
    [REC_BPF_C_DUE_RAN] = "due_ran",
    [REC_BPF_C_WATCHES] = "watches",
    [REC_BPF_C_WATCH_NS] = "watch_ns",
    [REC_BPF_C_BAD + REC_BPF_BAD_CALL_STACK] = "bad_call_stack",
    [REC_BPF_C_BAD + REC_BPF_BAD_FRAME_STACK] = "bad_frame_stack",
    [REC_BPF_C_BAD + REC_BPF_BAD_SHAPE] = "bad_shape",
    [REC_BPF_C_BAD + REC_BPF_BAD_CALLINFO] = "bad_callinfo",
    [REC_BPF_C_BAD + REC_BPF_BAD_FS_TOP] = "bad_fs_top",
    [REC_BPF_C_BAD + REC_BPF_BAD_NEXT_STMT] = "bad_next_stmt",
    [REC_BPF_C_BAD + REC_BPF_BAD_FRAME] = "bad_frame",
    [REC_BPF_C_BAD + REC_BPF_BAD_REGS] = "bad_regs",
};

const char *rec_bpf_counter_name(unsigned which)
{
    return which < REC_BPF_C__COUNT && counter_names[which] ? counter_names[which] : "?";
}

/* The upstream version a distribution's kernel is built from: Debian
 * keeps 6.1.0 in the release and says "Debian 6.1.158-1" in the version;
 * Ubuntu has /proc/version_signature, "Ubuntu 6.2.0-39.40-generic 6.2.16". */
static int upstream(const char *release, const char *version, const char *signature,
                    unsigned *major, unsigned *minor, unsigned *patch)
{
    const char *debian = version ? strstr(version, "Debian ") : NULL;
    if (signature) {
        const char *last = strrchr(signature, ' ');
        if (last && sscanf(last + 1, "%u.%u.%u", major, minor, patch) == 3)
            return 0;
    }
    if (debian && sscanf(debian + 7, "%u.%u.%u", major, minor, patch) == 3)
        return 0;
    *patch = 0;
    return sscanf(release, "%u.%u.%u", major, minor, patch) >= 2 ? 0 : -1;
}

int rec_bpf_kernel_check(const char *release, const char *version, const char *signature, zs_error *err)
{
    unsigned major = 0, minor = 0, patch = 0;
    if (upstream(release, version, signature, &major, &minor, &patch))
        return 0;
    unsigned v = major * 1000 + minor;
    if (v < 5008)
        return zs_fail(err, ZS_E_NO_BPF, "kernel %u.%u (%s) is older than 5.8 (the BPF ring buffer)",
                       major, minor, release);
    int freezes = (v >= 5019 && v <= 6000) || (v == 6001 && patch < 36) || v == 6002 ||
                  (v == 6003 && patch < 10);
    if (!freezes)
        return 0;
    return zs_fail(err, ZS_E_NO_BPF,
                   "kernel %u.%u.%u (%s) can freeze on bpf_probe_read_user (fixed in 6.1.36, "
                   "6.3.10, 6.4)", major, minor, patch, release);
}

/* Root, or CAP_BPF and CAP_PERFMON (5.8+), in the effective set. */
static int capable(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data))
        return 0;
    uint64_t eff = data[0].effective | (uint64_t)data[1].effective << 32;
#define HAS(cap) ((eff >> (cap)) & 1)
    return HAS(21 /* CAP_SYS_ADMIN */) || (HAS(39 /* CAP_BPF */) && HAS(38 /* CAP_PERFMON */));
#undef HAS
}

/* The kernel side keys threads by the host's ids: in a pid namespace of
 * our own the ids we know are not those. */
static int own_pid_namespace(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    int nested = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned a, b;
        if (!strncmp(line, "NSpid:", 6)) {
            nested = sscanf(line + 6, "%u %u", &a, &b) == 2;
            break;
        }
    }
    fclose(f);
    return nested;
}

static int lockdown_confidential(void)
{
    char buf[128] = "";
    int fd = open("/sys/kernel/security/lockdown", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got > 0)
        buf[got] = '\0';
    return strstr(buf, "[confidentiality]") != NULL;
}

/* What stands in the way before anything is loaded. */
static int preflight(zs_error *err)
{
    if (!rec_access_host_user_ns())
        return zs_fail(err, ZS_E_NO_BPF, "runs in a user namespace of its own (a container's): "
                       "BPF needs root, or CAP_BPF and CAP_PERFMON, on the host");
    if (!capable())
        return zs_fail(err, ZS_E_NO_BPF, "needs root, or CAP_BPF and CAP_PERFMON");
    if (own_pid_namespace())
        return zs_fail(err, ZS_E_NO_BPF,
                       "runs in a pid namespace of its own (run it in the host's: the kernel "
                       "side sees the host's pids)");
    if (lockdown_confidential())
        return zs_fail(err, ZS_E_NO_BPF,
                       "kernel lockdown is in confidentiality mode: BPF may not read memory");
    struct utsname u;
    char signature[256] = "";
    FILE *f = fopen("/proc/version_signature", "r");
    if (f) {
        if (fgets(signature, sizeof signature, f))
            signature[strcspn(signature, "\n")] = '\0';
        fclose(f);
    }
    if (uname(&u) == 0 && rec_bpf_kernel_check(u.release, u.version, signature[0] ? signature : NULL, err))
        return -1;
    if (access("/sys/kernel/btf/vmlinux", R_OK))
        return zs_fail(err, ZS_E_NO_BPF, "kernel without BTF (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF)");
    if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1)
        return zs_fail(err, ZS_E_NO_BPF, "kernel without the BPF ring buffer (5.8+)");
    if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1)
        return zs_fail(err, ZS_E_NO_BPF, "kernel without BPF programs on perf events");
    return 0;
}

static int has_helper(enum bpf_func_id helper)
{
    return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, helper, NULL) == 1;
}

/* Which of the kernel side's variants runs here (its zs_have_* constants):
 * attach cookies and bpf_task_pt_regs came with 5.15, and
 * bpf_get_current_task_btf, which the latter needs, with 5.11. legacy
 * takes the older kernels' way on any kernel, for the tests. */
static void probe_features(rec_bpf *b, int legacy)
{
    b->have_cookie = !legacy && has_helper(BPF_FUNC_get_attach_cookie);
    b->have_task_pt_regs = !legacy && has_helper(BPF_FUNC_task_pt_regs) &&
                           has_helper(BPF_FUNC_get_current_task_btf);
    b->skel->rodata->zs_have_cookie = (uint32_t)b->have_cookie;
    b->skel->rodata->zs_have_task_pt_regs = (uint32_t)b->have_task_pt_regs;
}

const char *rec_bpf_variant(const rec_bpf *b)
{
    if (b->have_cookie && b->have_task_pt_regs)
        return "the perf event's cookie, bpf_task_pt_regs";
    if (b->have_cookie)
        return "the perf event's cookie, user registers from the kernel stack's top";
    if (b->have_task_pt_regs)
        return "targets by tid, bpf_task_pt_regs";
    return "targets by tid, user registers from the kernel stack's top (before 5.15)";
}

static int on_record(void *ctx, void *data, size_t len)
{
    rec_bpf *b = ctx;
    const rec_bpf_event *ev = data;
    if (len < sizeof *ev || ev->n > REC_BPF_MAX_FRAMES || ev->callinfo_size > REC_BPF_MAX_CALLINFO ||
        ev->frame_span > REC_BPF_MAX_SPAN || ev->stack_len > REC_BPF_STACK_MAX ||
        len < sizeof *ev + (size_t)ev->n * (ev->callinfo_size + ev->frame_span) + ev->stack_len) {
        b->malformed++;
        return 0;
    }
    b->handed++;
    int rc = b->cb(b->cb_ctx, ev, len);
    if (rc != REC_BPF_ENOUGH)
        return rc;
    /* libbpf stops on a negative return, past this record (taken). */
    b->enough = 1;
    return -ECANCELED;
}

/* Opens and loads the kernel side with off-CPU samples taken as offcpu
 * says: the tick, and zs_due or zs_switch (attached here: it runs for
 * everyone's switches) or neither. */
static int load(rec_bpf *b, unsigned flags, rec_bpf_offcpu offcpu, zs_error *err)
{
    first_warning[0] = '\0';
    if (!(b->skel = zs_sampler__open()))
        return zs_fail(err, ZS_E_NO_BPF, "cannot open the BPF object: %s", strerror(errno));
    bpf_map__set_max_entries(b->skel->maps.zs_slot_of, MAX_TARGETS);
    bpf_map__set_max_entries(b->skel->maps.zs_slots, MAX_TARGETS);
    bpf_map__set_max_entries(b->skel->maps.zs_counters, (uint32_t)b->ncpus);
    bpf_map__set_max_entries(b->skel->maps.zs_offcpu, MAX_TARGETS);
    bpf_map__set_max_entries(b->skel->maps.zs_watches, MAX_TARGETS);
    /* Every CPU may run a target (--all on a sensor): the ring grows with
     * them and the rate, a power of 2 as the kernel wants it. */
    uint64_t ring = RING_BYTES, hz = 1000000000ULL / b->period_ns;
    while (ring < MAX_RING_BYTES && ring < (uint64_t)b->ncpus * hz * RING_BYTES_PER_CPU_HZ)
        ring <<= 1;
    if (flags & REC_BPF_SMALL_RING)
        ring = SMALL_RING_BYTES;
    bpf_map__set_max_entries(b->skel->maps.zs_ring, (uint32_t)ring);
    b->skel->rodata->zs_ring_wake_bytes = ring / 4;
    bpf_map__set_max_entries(b->skel->maps.zs_scratch, (uint32_t)b->ncpus);
    bpf_program__set_autoload(b->skel->progs.zs_switch, offcpu == REC_BPF_OFFCPU_SWITCH);
    bpf_program__set_autoload(b->skel->progs.zs_due, offcpu == REC_BPF_OFFCPU_DUE && !b->due_run);
    bpf_program__set_autoload(b->skel->progs.zs_due_run, offcpu == REC_BPF_OFFCPU_DUE && b->due_run);
    bpf_program__set_autoload(b->skel->progs.zs_due_arm, offcpu == REC_BPF_OFFCPU_DUE && b->watch);
    b->skel->rodata->zs_self_timing = (flags & REC_BPF_SELF_TIMING) != 0;
    probe_features(b, (flags & REC_BPF_LEGACY) != 0);
    b->offcpu = offcpu;
    if (zs_sampler__load(b->skel))
        return zs_fail(err, ZS_E_NO_BPF, "the kernel refused the BPF programs: %s",
                       first_warning[0] ? first_warning : strerror(errno));
    if (offcpu == REC_BPF_OFFCPU_SWITCH &&
        !(b->skel->links.zs_switch = bpf_program__attach(b->skel->progs.zs_switch)))
        return zs_fail(err, ZS_E_NO_BPF, "cannot attach to sched_switch: %s",
                       first_warning[0] ? first_warning : strerror(errno));
    return 0;
}

/* zs_due on one thread, tid (the task iterator's parameter: 6.1). */
static struct bpf_link *attach_due(rec_bpf *b, pid_t tid)
{
    union bpf_iter_link_info info;
    memset(&info, 0, sizeof info);
    info.task.tid = (uint32_t)tid;
    LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof info);
    return bpf_program__attach_iter(b->skel->progs.zs_due, &opts);
}

/* Whether zs_due attaches to one thread here: tried on our own. */
static int check_due_attaches(rec_bpf *b, zs_error *err)
{
    first_warning[0] = '\0';
    struct bpf_link *l = attach_due(b, (pid_t)syscall(SYS_gettid));
    if (!l)
        return zs_fail(err, ZS_E_NO_BPF, "cannot attach a task iterator to one thread: %s",
                       first_warning[0] ? first_warning : strerror(errno));
    bpf_link__destroy(l);
    return 0;
}

/* Whether the running kernel has the kfunc name (its BTF says). */
static int kernel_has_kfunc(const char *name)
{
    struct btf *vmlinux = btf__load_vmlinux_btf();
    if (!vmlinux)
        return 0;
    int found = btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
    btf__free(vmlinux);
    return found;
}

/* Off-CPU samples when due, their looks by BPF_PROG_RUN where the kernel
 * has bpf_task_from_pid (6.2), their verdict made by timers in the kernel
 * where it also lets a timer's callback take a task (zs_due_arm), else by
 * task iterators (6.1); 0 when none loads. */
static int load_due(rec_bpf *b, unsigned flags, zs_error *err)
{
    if (!(flags & REC_BPF_DUE_ITER) && kernel_has_kfunc("bpf_task_from_pid")) {
        zs_error why_not = {0};
        b->due_run = 1;
        b->watch = !(flags & REC_BPF_DUE_RUN);
        if (b->watch && load(b, flags, REC_BPF_OFFCPU_DUE, &why_not) == 0)
            return 0;
        if (b->watch) {
            snprintf(b->watch_refused, sizeof b->watch_refused, "%.180s", why_not.detail);
            zs_sampler__destroy(b->skel);
            b->skel = NULL;
            b->watch = 0;
        }
        if (load(b, flags, REC_BPF_OFFCPU_DUE, &why_not) == 0)
            return 0;
        snprintf(b->due_run_refused, sizeof b->due_run_refused, "%.180s", why_not.detail);
        zs_sampler__destroy(b->skel);
        b->skel = NULL;
        b->due_run = 0;
    }
    return load(b, flags, REC_BPF_OFFCPU_DUE, err) || check_due_attaches(b, err);
}

rec_bpf *rec_bpf_open(unsigned hz, unsigned flags, zs_error *err)
{
    if (hz == 0 || hz > 100000) {
        zs_fail(err, ZS_E_USAGE, "rate %u Hz out of range", hz);
        return NULL;
    }
    libbpf_set_print(libbpf_print);
    first_warning[0] = '\0';
    if (preflight(err))
        return NULL;
    rec_bpf *b = calloc(1, sizeof *b);
    if (!b) {
        zs_fail(err, ZS_E_NOMEM, "BPF sampler");
        return NULL;
    }
    b->period_ns = 1000000000ULL / hz;
    b->ncpus = libbpf_num_possible_cpus();
    if (b->ncpus <= 0) {
        zs_fail(err, ZS_E_NO_BPF, "cannot count the possible CPUs");
        goto fail;
    }
    rec_bpf_offcpu want = REC_BPF_OFFCPU_SWITCH;
    if (flags & REC_BPF_NO_OFFCPU)
        want = REC_BPF_OFFCPU_NONE;
    else if ((flags & REC_BPF_OFFCPU_WHEN_DUE) && !(flags & REC_BPF_LEGACY))
        want = REC_BPF_OFFCPU_DUE;
    zs_error why_not = {0};
    if (want == REC_BPF_OFFCPU_DUE && load_due(b, flags, &why_not)) {
        /* Before 6.1 (sleepable task iterators of one thread): at each switch. */
        snprintf(b->due_refused, sizeof b->due_refused, "%.180s", why_not.detail);
        zs_sampler__destroy(b->skel);
        b->skel = NULL;
        want = REC_BPF_OFFCPU_SWITCH;
    }
    if (!b->skel && load(b, flags, want, err))
        goto fail;
    b->ring = ring_buffer__new(bpf_map__fd(b->skel->maps.zs_ring), on_record, b, NULL);
    if (!b->ring) {
        zs_fail(err, ZS_E_NO_BPF, "cannot map the BPF ring buffer: %s", strerror(errno));
        goto fail;
    }
    return b;
fail:
    rec_bpf_close(b);
    return NULL;
}

static target *find(rec_bpf *b, pid_t tid)
{
    for (size_t i = 0; i < b->ntargets; i++)
        if (b->targets[i].tid == tid)
            return &b->targets[i];
    return NULL;
}

/* sched_switch's filter (zs_tid_filter, in the object's .bss, mapped
 * here): a bit for each target's tid modulo its size. Word by word, so
 * that the kernel side never sees a target's bit cleared in passing. */
static void refilter(rec_bpf *b)
{
    enum { WORDS = REC_BPF_TID_FILTER_BITS / 64 };
    uint64_t want[WORDS] = {0};
    for (size_t i = 0; i < b->ntargets; i++) {
        unsigned bit = (unsigned)b->targets[i].tid % REC_BPF_TID_FILTER_BITS;
        want[bit / 64] |= 1ULL << (bit % 64);
    }
    for (unsigned w = 0; w < WORDS; w++)
        __atomic_store_n(&b->skel->bss->zs_tid_filter[w], want[w], __ATOMIC_RELEASE);
}

/* The lowest slot no target holds (below MAX_TARGETS while one is free). */
static uint32_t free_slot(const rec_bpf *b)
{
    for (uint32_t slot = 0;; slot++) {
        size_t i = 0;
        while (i < b->ntargets && b->targets[i].slot != slot)
            i++;
        if (i == b->ntargets)
            return slot;
    }
}

static int put_target(rec_bpf *b, const target *t)
{
    return bpf_map__update_elem(b->skel->maps.zs_slots, &t->slot, sizeof t->slot, &t->value,
                                sizeof t->value, BPF_ANY);
}

/* t's thread no longer found by the kernel side: its tid leads nowhere,
 * and its slot's tid is 0, no thread's. */
static void unmap_target(rec_bpf *b, const target *t)
{
    uint32_t key = (uint32_t)t->tid;
    rec_bpf_target none;
    memset(&none, 0, sizeof none);
    bpf_map__delete_elem(b->skel->maps.zs_slot_of, &key, sizeof key, 0);
    bpf_map__update_elem(b->skel->maps.zs_slots, &t->slot, sizeof t->slot, &none, sizeof none, BPF_ANY);
}

static void forget(rec_bpf *b, target *t)
{
    bpf_link__destroy(t->due);
    bpf_link__destroy(t->link);
    unmap_target(b, t);
    *t = b->targets[--b->ntargets];
    refilter(b);
}

void rec_bpf_close(rec_bpf *b)
{
    if (!b)
        return;
    while (b->ntargets)
        forget(b, &b->targets[b->ntargets - 1]);
    ring_buffer__free(b->ring);
    zs_sampler__destroy(b->skel);
    free(b);
}

uint64_t rec_bpf_period_ns(const rec_bpf *b) { return b->period_ns; }

size_t rec_bpf_programs(const rec_bpf *b, uint32_t *ids, size_t max)
{
    struct bpf_program *progs[] = {b->skel->progs.zs_tick, b->skel->progs.zs_switch,
                                   b->skel->progs.zs_due, b->skel->progs.zs_due_run,
                                   b->skel->progs.zs_due_arm};
    size_t n = 0;
    for (size_t i = 0; i < sizeof progs / sizeof *progs && n < max; i++) {
        struct bpf_prog_info info;
        uint32_t len = sizeof info;
        memset(&info, 0, sizeof info);
        int fd = bpf_program__fd(progs[i]);
        if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
            ids[n++] = info.id;
    }
    return n;
}

uint64_t rec_bpf_malformed(const rec_bpf *b) { return b->malformed; }

int rec_bpf_params_of(const rec_target *t, size_t max_frames, rec_bpf_params *out, zs_error *err)
{
    const zs_layout *l = &t->layout;
    memset(out, 0, sizeof *out);
    if (l->model != ZS_MODEL_FRAME_STACK && l->model != ZS_MODEL_CALLINFO_FRAME)
        return zs_fail(err, ZS_E_NO_BPF, "no BPF sampler for the %s model", zs_model_name(l->model));
    out->pid = (uint32_t)t->pid;
    out->model = (uint32_t)l->model;
    out->call_stack = t->call_stack;
    out->frame_stack = l->model == ZS_MODEL_FRAME_STACK ? t->frame_stack : 0;
    out->vector_begin = l->vector_begin;
    out->callinfo_size = l->callinfo_size;
    out->callinfo_frame = l->model == ZS_MODEL_CALLINFO_FRAME ? l->callinfo_frame : 0;
    out->frame_function = l->model == ZS_MODEL_CALLINFO_FRAME ? l->frame_function : 0;
    out->frame_next_stmt = l->frame_next_stmt;
    out->max_frames = max_frames > REC_BPF_MAX_FRAMES ? REC_BPF_MAX_FRAMES : (uint32_t)max_frames;
    out->stack_bytes = 0;
    return 0;
}

static int offset_ok(int32_t off) { return off >= 0 && off < MAX_OFFSET; }

/* p within what the kernel side can read, as the target map's value. */
static int target_of(const rec_bpf *b, const rec_bpf_params *p, rec_bpf_target *out, zs_error *err)
{
    memset(out, 0, sizeof *out);
    out->p = *p;
    out->period_ns = b->period_ns;
    const int cf = p->model == REC_BPF_MODEL_CALLINFO_FRAME;
    if (p->model != REC_BPF_MODEL_FRAME_STACK && !cf)
        return zs_fail(err, ZS_E_LAYOUT, "BPF sampler: unknown model %u", p->model);
    if (!p->call_stack || (!cf && !p->frame_stack))
        return zs_fail(err, ZS_E_LAYOUT, "BPF sampler: no address for call_stack%s",
                       cf ? "" : " or g_frame_stack");
    if (p->callinfo_size < 8 || p->callinfo_size > REC_BPF_MAX_CALLINFO || p->callinfo_size % 8)
        return zs_fail(err, ZS_E_LAYOUT, "BPF sampler: CallInfo of %d bytes (8 to %d, a multiple of 8)",
                       p->callinfo_size, REC_BPF_MAX_CALLINFO);
    if (!offset_ok(p->vector_begin) || !offset_ok(p->frame_next_stmt))
        return zs_fail(err, ZS_E_LAYOUT, "BPF sampler: offsets beyond %d", MAX_OFFSET);
    if (p->stack_bytes > REC_BPF_STACK_MAX)
        return zs_fail(err, ZS_E_USAGE, "BPF sampler: stack copy of %u bytes (at most %d)",
                       p->stack_bytes, REC_BPF_STACK_MAX);
    if (p->max_frames == 0 || p->max_frames > REC_BPF_MAX_FRAMES)
        return zs_fail(err, ZS_E_USAGE, "BPF sampler: max frames %u (1 to %d)", p->max_frames,
                       REC_BPF_MAX_FRAMES);
    if (!cf)
        return 0;
    if (!offset_ok(p->frame_function) || p->callinfo_frame < 0 ||
        p->callinfo_frame + 8 > p->callinfo_size)
        return zs_fail(err, ZS_E_LAYOUT, "BPF sampler: Frame offsets out of range");
    int32_t lo;
    size_t span = rec_raw_frame_span(p->frame_function, p->frame_next_stmt, &lo);
    if (span > REC_BPF_MAX_SPAN)
        return zs_fail(err, ZS_E_LAYOUT, "BPF sampler: Frame's function and next_stmt %zu bytes apart "
                       "(at most %d)", span - 8, REC_BPF_MAX_SPAN - 8);
    out->frame_lo = lo;
    out->frame_span = (uint32_t)span;
    return 0;
}

static int perf_event_open_thread(pid_t tid, uint64_t period_ns)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    /* Ticks of the thread's own CPU time: it follows the thread from CPU
     * to CPU and is silent while the thread waits. Enabled by libbpf once
     * the program is attached. */
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = period_ns;
    a.disabled = 1;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* t's timer in the kernel (zs_due_arm): 0 when armed, else -1 with the
 * reason kept. */
static int arm_watch(rec_bpf *b, const target *t)
{
    struct rec_bpf_due_args args = {(uint32_t)t->tid, t->slot};
    LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof args);
    if (bpf_prog_test_run_opts(bpf_program__fd(b->skel->progs.zs_due_arm), &opts) == 0 && opts.retval == 0)
        return 0;
    snprintf(b->watch_refused, sizeof b->watch_refused, "thread %d's timer could not be armed (%s, %u)",
             (int)t->tid, strerror(errno), opts.retval);
    return -1;
}

int rec_bpf_add_target(rec_bpf *b, pid_t pid, pid_t tid, const rec_bpf_params *p, zs_error *err)
{
    rec_bpf_target value;
    if (target_of(b, p, &value, err))
        return -1;
    value.p.pid = (uint32_t)pid;
    if (find(b, tid))
        return zs_fail(err, ZS_E_USAGE, "BPF sampler: thread %d is sampled already", (int)tid);
    if (b->ntargets == MAX_TARGETS)
        return zs_fail(err, ZS_E_NO_BPF, "BPF sampler: %d threads at most", MAX_TARGETS);

    uint32_t key = (uint32_t)tid, slot = free_slot(b);
    value.tid = (uint32_t)tid;
    target *t = &b->targets[b->ntargets];
    t->tid = tid;
    t->slot = slot;
    t->value = value;
    t->link = NULL;
    t->due = NULL;

    struct bpf_map *offcpu = b->skel->maps.zs_offcpu;
    void *off = calloc(1, bpf_map__value_size(offcpu));
    if (!off)
        return zs_fail(err, ZS_E_NOMEM, "BPF sampler: off-CPU slot");
    /* No record or carry of the slot's last thread. */
    int rc = bpf_map__update_elem(offcpu, &slot, sizeof slot, off, bpf_map__value_size(offcpu), BPF_ANY);
    free(off);
    if (rc || put_target(b, t) ||
        bpf_map__update_elem(b->skel->maps.zs_slot_of, &key, sizeof key, &slot, sizeof slot, BPF_NOEXIST)) {
        int e = errno;
        unmap_target(b, t);
        return zs_fail(err, ZS_E_NO_BPF, "BPF sampler: cannot add thread %d to the maps: %s", (int)tid,
                       strerror(e));
    }
    b->ntargets++;
    refilter(b);
    int fd = t->perf_fd = perf_event_open_thread(tid, b->period_ns);
    if (fd < 0) {
        int e = errno;
        forget(b, t);
        return zs_fail(err, e == ESRCH ? ZS_E_NO_PROCESS : ZS_E_NO_BPF,
                       "BPF sampler: perf event for thread %d: %s", (int)tid, strerror(e));
    }
    first_warning[0] = '\0';
    /* Without cookies (before 5.15) the tick finds the slot by tid. */
    LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = b->have_cookie ? t->slot : 0);
    if (!(t->link = bpf_program__attach_perf_event_opts(b->skel->progs.zs_tick, fd, &opts))) {
        int e = errno;
        close(fd);
        forget(b, t);
        return zs_fail(err, ZS_E_NO_BPF, "BPF sampler: cannot attach to thread %d's perf event: %s",
                       (int)tid, first_warning[0] ? first_warning : strerror(e));
    }
    if (b->offcpu == REC_BPF_OFFCPU_DUE && !b->due_run && !(t->due = attach_due(b, tid))) {
        int e = errno;
        forget(b, t);
        return zs_fail(err, e == ESRCH ? ZS_E_NO_PROCESS : ZS_E_NO_BPF,
                       "BPF sampler: cannot attach the off-CPU sampler to thread %d: %s", (int)tid,
                       first_warning[0] ? first_warning : strerror(e));
    }
    if (b->watch && arm_watch(b, t)) /* the looks at the rate instead, for every thread */
        b->watch = 0;
    return 0;
}

rec_bpf_offcpu rec_bpf_offcpu_mode(const rec_bpf *b) { return b->offcpu; }

const char *rec_bpf_due_refused(const rec_bpf *b) { return b->due_refused; }

const char *rec_bpf_due_way(const rec_bpf *b)
{
    return b->watch ? "by BPF_PROG_RUN when a timer in the kernel finds one due"
           : b->due_run ? "by BPF_PROG_RUN at the rate" : "by task iterators";
}

const char *rec_bpf_due_run_refused(const rec_bpf *b) { return b->due_run_refused; }

int rec_bpf_watched(const rec_bpf *b) { return b && b->watch; }

const char *rec_bpf_watch_refused(const rec_bpf *b) { return b->watch_refused; }

int rec_bpf_notice_fd(const rec_bpf *b) { return b->watch ? bpf_map__fd(b->skel->maps.zs_ring) : -1; }

/* zs_due_run on thread tid: its verdict (REC_BPF_DUE_* bits), -1 when
 * it could not run. */
static int run_due(rec_bpf *b, pid_t tid)
{
    struct rec_bpf_due_args args = {(uint32_t)tid, 0};
    LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof args);
    return bpf_prog_test_run_opts(bpf_program__fd(b->skel->progs.zs_due_run), &opts) ? -1 : (int)opts.retval;
}

/* A look at t by BPF_PROG_RUN or by its iterator: the verdict, 0 where it
 * has no iterator, -1 when it could not be looked at. */
static int look(rec_bpf *b, const target *t)
{
    if (b->due_run)
        return run_due(b, t->tid);
    if (!t->due)
        return 0;
    /* Reading the iterator runs zs_due on the thread; it prints its
     * verdict (a byte when not 0). */
    int fd = bpf_iter_create(bpf_link__fd(t->due));
    if (fd < 0)
        return -1;
    char buf[64];
    ssize_t got, printed = 0;
    while ((got = read(fd, buf, sizeof buf)) > 0)
        printed += got;
    close(fd);
    if (got < 0)
        return -1;
    return printed == 1 ? (unsigned char)buf[0] : 0;
}

int rec_bpf_due_thread(rec_bpf *b, pid_t tid)
{
    return b->due_run && find(b, tid) && run_due(b, tid) >= 0 ? 0 : -1;
}

int rec_bpf_due(rec_bpf *b, int *busy)
{
    int failed = 0;
    *busy = b->ntargets > 0;
    for (size_t i = 0; i < b->ntargets; i++) {
        int verdict = look(b, &b->targets[i]);
        failed += verdict < 0;
        *busy &= verdict > 0 && (verdict & REC_BPF_DUE_BUSY);
    }
    return failed;
}

int rec_bpf_settle(rec_bpf *b, int first)
{
    if (b->offcpu != REC_BPF_OFFCPU_DUE)
        return 0;
    int owing = 0;
    for (size_t i = 0; i < b->ntargets; i++) {
        target *t = &b->targets[i];
        if (!first && !t->owing)
            continue;
        int verdict = look(b, t);
        t->owing = verdict > 0 && (verdict & REC_BPF_DUE_OWING);
        owing += t->owing;
    }
    return owing;
}

int rec_bpf_remove_target(rec_bpf *b, pid_t tid)
{
    target *t = find(b, tid);
    if (!t)
        return -1;
    forget(b, t);
    return 0;
}

int rec_bpf_set_stack_base(rec_bpf *b, pid_t tid, uint64_t base)
{
    target *t = find(b, tid);
    if (!t)
        return -1;
    if (t->value.stack_base == base)
        return 0;
    t->value.stack_base = base;
    /* The kernel side reads the value without a lock: a tick in the middle
     * of this update sees the old base or the new, each a whole word. */
    return put_target(b, t);
}

int rec_bpf_thread_cpu_ns(rec_bpf *b, pid_t tid, uint64_t *ns)
{
    target *t = find(b, tid);
    return t && read(t->perf_fd, ns, sizeof *ns) == (ssize_t)sizeof *ns ? 0 : -1;
}

int rec_bpf_poll(rec_bpf *b, rec_bpf_cb cb, void *ctx)
{
    b->cb = cb;
    b->cb_ctx = ctx;
    b->handed = 0;
    b->enough = 0;
    int rc = ring_buffer__consume(b->ring);
    b->cb = NULL;
    return rc < 0 && !b->enough ? rc : b->handed;
}

int rec_bpf_counters(const rec_bpf *b, uint64_t *out)
{
    /* The counters lead each CPU's value of zs_counters. */
    struct bpf_map *m = b->skel->maps.zs_counters;
    size_t size = bpf_map__value_size(m);
    uint64_t *v = calloc(1, size > REC_BPF_C__COUNT * sizeof *v ? size : REC_BPF_C__COUNT * sizeof *v);
    memset(out, 0, REC_BPF_C__COUNT * sizeof *out);
    if (!v)
        return -1;
    int rc = 0;
    for (uint32_t cpu = 0; rc == 0 && cpu < (uint32_t)b->ncpus; cpu++) {
        rc = bpf_map__lookup_elem(m, &cpu, sizeof cpu, v, size, 0);
        for (unsigned k = 0; rc == 0 && k < REC_BPF_C__COUNT; k++)
            out[k] += v[k];
    }
    free(v);
    return rc ? -1 : 0;
}

const uint8_t *rec_bpf_event_callinfo(const rec_bpf_event *ev, uint32_t i)
{
    return (const uint8_t *)(ev + 1) + (size_t)i * ev->callinfo_size;
}

const uint8_t *rec_bpf_event_stack(const rec_bpf_event *ev)
{
    return (const uint8_t *)(ev + 1) + (size_t)ev->n * (ev->callinfo_size + ev->frame_span);
}

const uint8_t *rec_bpf_event_frame(const rec_bpf_event *ev, uint32_t i)
{
    if (!ev->frame_span)
        return NULL;
    return (const uint8_t *)(ev + 1) + (size_t)ev->n * ev->callinfo_size + (size_t)i * ev->frame_span;
}
