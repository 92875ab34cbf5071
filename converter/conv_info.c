#include "conv_info.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "zs_layout.h"
#include "zs_reader.h"

enum { MAX_PROCS = 64, MAX_EVENTS_SHOWN = 8 };

typedef struct proc_info {
    uint32_t pid;
    double net_first, net_last;
    int has_net;
    uint64_t samples;
} proc_info;

typedef struct info {
    uint64_t frames, last_offset;
    int any;
    uint64_t samples, stacks, snapshot_bytes, snapshot_regions, skipped, torn, events_shown;
    uint64_t first_us, last_us;
    int64_t start_wall_ns;
    int trailer;
    proc_info procs[MAX_PROCS];
    size_t nprocs;
    uint32_t *stack_pid; /* by stack id, for per-process sample counts */
    size_t nstack_pid;
} info;

static proc_info *proc_of(info *in, uint32_t pid)
{
    for (size_t i = 0; i < in->nprocs; i++)
        if (in->procs[i].pid == pid)
            return &in->procs[i];
    if (in->nprocs == MAX_PROCS)
        return NULL;
    in->procs[in->nprocs] = (proc_info){.pid = pid};
    return &in->procs[in->nprocs++];
}

static void print_wall(FILE *out, int64_t ns)
{
    time_t secs = (time_t)(ns / 1000000000LL);
    struct tm tm;
    char buf[32];
    gmtime_r(&secs, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fputs(buf, out);
}

static void header(const zs_record *r, info *in, FILE *out)
{
    const zs_kv *kv = r->header.items;
    size_t n = r->header.count;
    const char *wall = zs_kv_get(kv, n, "start_wall_ns"), *part = zs_kv_get(kv, n, "part");
    in->start_wall_ns = wall ? strtoll(wall, NULL, 10) : 0;
    fprintf(out, "  recorded by zeek-spy %s on %s, %s mode, %s Hz",
            zs_kv_get(kv, n, "recorder_version") ? zs_kv_get(kv, n, "recorder_version") : "?",
            zs_kv_get(kv, n, "host") ? zs_kv_get(kv, n, "host") : "?",
            zs_kv_get(kv, n, "mode") ? zs_kv_get(kv, n, "mode") : "?",
            zs_kv_get(kv, n, "rate_hz") ? zs_kv_get(kv, n, "rate_hz") : "?");
    if (part)
        fprintf(out, ", part %s of session %.8s", part, zs_kv_get(kv, n, "session_id") ? zs_kv_get(kv, n, "session_id") : "?");
    fputc('\n', out);
}

static void process(const zs_record *r, info *in, FILE *out)
{
    const zs_kv *kv = r->process.items;
    size_t n = r->process.count;
    const char *layout = zs_kv_get(kv, n, "layout"), *node = zs_kv_get(kv, n, "node");
    zs_layout l;
    const char *model = layout && !zs_layout_parse(layout, strlen(layout), "layout", &l, NULL)
                            ? zs_model_name(l.model) : "unreadable";
    proc_of(in, r->process.pid);
    fprintf(out, "  process %u (pid %s in its namespace): Zeek %s, %s%s%s, layout from %s (%s model)\n",
            r->process.pid, zs_kv_get(kv, n, "ns_pid") ? zs_kv_get(kv, n, "ns_pid") : "?",
            zs_kv_get(kv, n, "zeek_version") ? zs_kv_get(kv, n, "zeek_version") : "?",
            zs_kv_get(kv, n, "exe") ? zs_kv_get(kv, n, "exe") : "?", node && *node ? ", node " : "",
            node && *node ? node : "", zs_kv_get(kv, n, "layout_source") ? zs_kv_get(kv, n, "layout_source") : "?",
            model);
}

static void account(const zs_record *r, info *in, FILE *out)
{
    proc_info *p;
    switch (r->type) {
    case ZS_REC_STACK:
        in->stacks++;
        if (r->stack.id < (1u << 24) && r->stack.id >= in->nstack_pid) {
            size_t n = (size_t)r->stack.id + 1024;
            uint32_t *more = realloc(in->stack_pid, n * sizeof *more);
            if (more) {
                memset(more + in->nstack_pid, 0, (n - in->nstack_pid) * sizeof *more);
                in->stack_pid = more;
                in->nstack_pid = n;
            }
        }
        if (r->stack.id < in->nstack_pid)
            in->stack_pid[r->stack.id] = r->stack.pid;
        break;
    case ZS_REC_SAMPLE:
        if (!in->samples++)
            in->first_us = r->sample.t_us;
        in->last_us = r->sample.t_us;
        if (r->sample.stack_id < in->nstack_pid && (p = proc_of(in, in->stack_pid[r->sample.stack_id])))
            p->samples++;
        break;
    case ZS_REC_SNAPSHOT:
        in->snapshot_bytes += r->snapshot.len;
        in->snapshot_regions++;
        break;
    case ZS_REC_NETTIME:
        if ((p = proc_of(in, r->nettime.pid))) {
            if (!p->has_net)
                p->net_first = r->nettime.network_time;
            p->net_last = r->nettime.network_time;
            p->has_net = 1;
        }
        break;
    case ZS_REC_EVENT:
        if (r->event.kind == ZS_EV_SKIPPED)
            in->skipped += r->event.value;
        else if (r->event.kind == ZS_EV_TORN)
            in->torn += r->event.value;
        else if (*r->event.message && in->events_shown++ < MAX_EVENTS_SHOWN)
            fprintf(out, "  event at %.3f s: %s\n", (double)r->event.t_us / 1e6, r->event.message);
        break;
    case ZS_REC_TRAILER:
        in->trailer = 1;
        break;
    default:
        break;
    }
}

static int describe(const char *path, FILE *out)
{
    struct stat st;
    zs_error err = {0};
    info in = {0};
    fprintf(out, "%s", path);
    if (stat(path, &st) == 0)
        fprintf(out, " (%lld bytes)", (long long)st.st_size);
    fputc('\n', out);
    zs_reader *r = zs_reader_open(path, &err);
    int got = -1;
    if (r) {
        zs_record rec;
        while ((got = zs_reader_next(r, &rec, &err)) > 0) {
            if (!in.any || rec.offset != in.last_offset)
                in.frames++;
            in.any = 1;
            in.last_offset = rec.offset;
            if (rec.type == ZS_REC_HEADER)
                header(&rec, &in, out);
            else if (rec.type == ZS_REC_PROCESS)
                process(&rec, &in, out);
            else
                account(&rec, &in, out);
        }
    }
    if (got == 0) {
        fprintf(out, "  format version %u; ", zs_reader_format_version(r));
        if (in.samples) {
            fprintf(out, "samples from ");
            print_wall(out, in.start_wall_ns + (int64_t)in.first_us * 1000);
            fprintf(out, " for %.2f s\n", (double)(in.last_us - in.first_us) / 1e6);
        } else {
            fprintf(out, "no samples\n");
        }
        for (size_t i = 0; i < in.nprocs; i++) {
            const proc_info *p = &in.procs[i];
            fprintf(out, "  pid %u: %" PRIu64 " samples", p->pid, p->samples);
            if (p->has_net)
                fprintf(out, ", network time %.6f .. %.6f", p->net_first, p->net_last);
            fputc('\n', out);
        }
        fprintf(out, "  %" PRIu64 " samples, %" PRIu64 " distinct stacks, %" PRIu64
                " skipped ticks, %" PRIu64 " torn reads; snapshot %" PRIu64 " bytes in %" PRIu64
                " regions\n",
                in.samples, in.stacks, in.skipped, in.torn, in.snapshot_bytes, in.snapshot_regions);
        uint64_t cut_at;
        if (zs_reader_truncated(r, &cut_at))
            fprintf(out, "  zstd frames: %" PRIu64 ", the last one (offset %" PRIu64
                    ") cut short; its whole records are used\n", in.frames, cut_at);
        else
            fprintf(out, "  zstd frames: %" PRIu64 ", all complete\n", in.frames);
        fprintf(out, "  %s\n", in.trailer ? "trailer present: the recorder finished"
                                          : "no trailer: the recorder did not finish (killed?)");
    } else {
        fprintf(out, "  error: %s: %s\n", zs_code_message(err.code), err.detail);
    }
    zs_reader_close(r);
    free(in.stack_pid);
    return got == 0 ? 0 : 1;
}

int conv_info(char **paths, int n, FILE *out)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += describe(paths[i], out);
    return bad;
}
