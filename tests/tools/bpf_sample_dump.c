/* SPDX-License-Identifier: BSD-3-Clause */
/* bpf-sample-dump: the BPF sampler (recorder/bpf) on one live zeek, one
 * line per record it sends.
 *
 *   bpf-sample-dump [--no-offcpu] [--self-timing] [--verbose] [--max-frames N]
 *                   [--poll-ms MS] PID SECONDS HZ
 *
 * Finds the process's globals and layout as the recorder does
 * (rec_target_open), samples its main thread for SECONDS at HZ ticks of
 * its CPU time, polls the ring buffer every MS ms (10) and prints, for
 * each record:
 *
 *   oncpu w=1 n=3 depth=3 status=0x0 flags=0x0 cpu=1 off_us=0 top=HTTP::parse_request
 *
 * (top: the innermost copied frame's function, read afterwards from the
 * live process: "-" for none, "?" when unreadable), then "counter NAME
 * VALUE" for each of the kernel side's counters, "malformed N",
 * "records N" and "cpu_ns N" (the thread's CPU time its perf event
 * counted).
 * On stderr once sampling runs: "bpf-sample-dump: pid P, Zeek V, M model,
 * HZ Hz, programs ID..." (the kernel's ids of its programs, as bpftool
 * lists them). Exit status 77 (the tests' skip) when BPF cannot run here,
 * with the reason on stderr; 1 on other failures, 2 on bad usage. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/rec_bpf.h"
#include "frames/rec_memory.h"
#include "targets/rec_target.h"
#include "zs_resolver.h"

enum { SKIP = 77, NAMES = 256 };

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

typedef struct dump {
    rec_target t;
    pid_t pid;
    zs_memory mem;
    uint64_t funcs[NAMES]; /* names read so far, by Func address */
    char *names[NAMES];
    long records;
} dump;

/* The Func of frame i as the model reads it. */
static uint64_t frame_func(const dump *d, const rec_bpf_event *ev, uint32_t i)
{
    const zs_layout *l = &d->t.layout;
    if (l->model == ZS_MODEL_FRAME_STACK)
        return zs_load_u64(rec_bpf_event_callinfo(ev, i) + l->callinfo_func);
    return zs_load_u64(rec_bpf_event_frame(ev, i) + (l->frame_function - ev->frame_lo));
}

static const char *name_of(dump *d, uint64_t func)
{
    if (!func)
        return "?";
    size_t slot = (func >> 3) % NAMES;
    if (d->funcs[slot] != func) {
        zs_func_info f;
        free(d->names[slot]);
        d->names[slot] = NULL;
        if (zs_resolve_func(&d->mem, &d->t.layout, func, &f) == 0) {
            d->names[slot] = strdup(f.name ? f.name : "?");
            zs_func_info_free(&f);
        }
        d->funcs[slot] = func;
    }
    return d->names[slot] ? d->names[slot] : "?";
}

static int on_event(void *ctx, const rec_bpf_event *ev, size_t len)
{
    dump *d = ctx;
    (void)len;
    d->records++;
    const char *top = ev->n ? name_of(d, frame_func(d, ev, ev->n - 1)) : "-";
    printf("%s w=%u n=%u depth=%u status=0x%x flags=0x%x cpu=%u off_us=%llu top=%s\n",
           ev->type == REC_BPF_OFFCPU ? "offcpu" : "oncpu", ev->weight, ev->n, ev->depth, ev->status,
           ev->flags, ev->cpu, (unsigned long long)(ev->off_ns / 1000), top);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: bpf-sample-dump [--no-offcpu] [--self-timing] [--verbose] [--max-frames N] "
                    "[--poll-ms MS] PID SECONDS HZ\n");
    exit(2);
}

int main(int argc, char **argv)
{
    unsigned flags = 0;
    long max_frames = REC_BPF_MAX_FRAMES, poll_ms = 10;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--no-offcpu"))
            flags |= REC_BPF_NO_OFFCPU;
        else if (!strcmp(argv[i], "--self-timing"))
            flags |= REC_BPF_SELF_TIMING;
        else if (!strcmp(argv[i], "--verbose"))
            rec_bpf_set_verbose(1);
        else if (!strcmp(argv[i], "--max-frames") && i + 1 < argc)
            max_frames = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--poll-ms") && i + 1 < argc)
            poll_ms = strtol(argv[++i], NULL, 10);
        else
            usage();
    }
    if (argc - i != 3)
        usage();
    static dump d;
    d.pid = (pid_t)strtol(argv[i], NULL, 10);
    double seconds = strtod(argv[i + 1], NULL);
    unsigned hz = (unsigned)strtoul(argv[i + 2], NULL, 10);
    if (d.pid <= 0 || seconds <= 0 || hz == 0 || max_frames <= 0 || poll_ms <= 0 || poll_ms > 10000)
        usage();
    d.mem = rec_live_memory(&d.pid);

    zs_error err = {0};
    rec_bpf *b = rec_bpf_open(hz, flags, &err);
    if (!b) {
        fprintf(stderr, "bpf-sample-dump: cannot sample with BPF: %s\n", err.detail);
        return err.code == ZS_E_NO_BPF ? SKIP : 1;
    }
    rec_bpf_params p;
    if (rec_target_open(d.pid, &(rec_layout_choice){0}, NULL, &d.t, &err) ||
        rec_target_check(&d.t, NULL, &err) || rec_bpf_params_of(&d.t, (size_t)max_frames, &p, &err) ||
        rec_bpf_add_target(b, d.pid, d.pid, &p, &err)) {
        zs_error_print("bpf-sample-dump", &err);
        rec_bpf_close(b);
        return 1;
    }
    uint32_t ids[2];
    size_t nids = rec_bpf_programs(b, ids, 2);
    fprintf(stderr, "bpf-sample-dump: pid %d, Zeek %s, %s model, %u Hz, programs", (int)d.pid,
            d.t.zeek_version, zs_model_name(d.t.layout.model), hz);
    for (size_t k = 0; k < nids; k++)
        fprintf(stderr, " %u", ids[k]);
    fprintf(stderr, "\n");

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    struct timespec start, now, tick = {poll_ms / 1000, poll_ms % 1000 * 1000000L};
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rc = 0;
    do {
        nanosleep(&tick, NULL);
        if (rec_bpf_poll(b, on_event, &d) < 0) {
            fprintf(stderr, "bpf-sample-dump: ring buffer: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        fflush(stdout);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!stop && (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds &&
             rec_target_alive(d.pid, -1));
    /* Sampling stops before the last poll, so that the counters below
     * count exactly the records printed. */
    uint64_t cpu_ns;
    int have_cpu = rec_bpf_thread_cpu_ns(b, d.pid, &cpu_ns) == 0;
    rec_bpf_remove_target(b, d.pid);
    rec_bpf_poll(b, on_event, &d);

    uint64_t c[REC_BPF_C__COUNT];
    if (rec_bpf_counters(b, c) == 0)
        for (unsigned k = 0; k < REC_BPF_C__COUNT; k++)
            printf("counter %s %llu\n", rec_bpf_counter_name(k), (unsigned long long)c[k]);
    printf("malformed %llu\n", (unsigned long long)rec_bpf_malformed(b));
    printf("records %ld\n", d.records);
    if (have_cpu)
        printf("cpu_ns %llu\n", (unsigned long long)cpu_ns);
    rec_bpf_close(b);
    for (int k = 0; k < NAMES; k++)
        free(d.names[k]);
    return rc;
}
