/* SPDX-License-Identifier: BSD-3-Clause */
#include "read/conv_info.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "read/conv_read.h"
#include "zs_cmdline.h"
#include "zs_layout.h"

enum { MAX_EVENTS_SHOWN = 8, MAX_REPORT_LINES = 64 };

/* What only a description looks at; the counts are the reading's
 * (conv_read_scan), the same a conversion makes. */
typedef struct info {
    FILE *out;
    uint64_t frames, last_offset;
    int any;
    uint64_t snapshot_bytes, snapshot_regions, events_shown;
    uint64_t modules, locations, located; /* --native: with source lines */
    char *report[MAX_REPORT_LINES]; /* the recorder's end report, shown after the rest */
    size_t nreport, report_left;    /* lines kept; lines beyond those */
} info;

static void print_wall(FILE *out, int64_t ns)
{
    time_t secs = (time_t)(ns / 1000000000LL);
    struct tm tm;
    char buf[32];
    gmtime_r(&secs, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fputs(buf, out);
}

static void header(const zs_record *r, FILE *out)
{
    const zs_kv *kv = r->header.items;
    size_t n = r->header.count;
    const char *part = zs_kv_get(kv, n, "part");
    fprintf(out, "  recorded by zeek-spy %s on %s, %s mode, %s Hz",
            zs_kv_get(kv, n, "recorder_version") ? zs_kv_get(kv, n, "recorder_version") : "?",
            zs_kv_get(kv, n, "host") ? zs_kv_get(kv, n, "host") : "?",
            zs_kv_get(kv, n, "mode") ? zs_kv_get(kv, n, "mode") : "?",
            zs_kv_get(kv, n, "rate_hz") ? zs_kv_get(kv, n, "rate_hz") : "?");
    if (part)
        fprintf(out, ", part %s of session %.8s", part, zs_kv_get(kv, n, "session_id") ? zs_kv_get(kv, n, "session_id") : "?");
    fputc('\n', out);
    /* Format 7 names it; every recording before was the ptrace sampler's. */
    const char *sampler = zs_kv_get(kv, n, "sampler");
    const char *off_cpu = zs_kv_get(kv, n, "off_cpu");
    fprintf(out, "  sampler: %s%s\n", sampler ? sampler : "ptrace",
            off_cpu && !strcmp(off_cpu, "none") ? ", on-CPU only (--cpu-only)" : "");
}

static void process(const zs_record *r, FILE *out)
{
    const zs_kv *kv = r->process.items;
    size_t n = r->process.count;
    const char *layout = zs_kv_get(kv, n, "layout"), *node = zs_kv_get(kv, n, "node");
    zs_layout l;
    const char *model = layout && !zs_layout_parse(layout, strlen(layout), "layout", &l, NULL)
                            ? zs_model_name(l.model) : "unreadable";
    fprintf(out, "  process %u (pid %s in its namespace): Zeek %s, %s%s%s, layout from %s (%s model)%s\n",
            r->process.pid, zs_kv_get(kv, n, "ns_pid") ? zs_kv_get(kv, n, "ns_pid") : "?",
            zs_kv_get(kv, n, "zeek_version") ? zs_kv_get(kv, n, "zeek_version") : "?",
            zs_kv_get(kv, n, "exe") ? zs_kv_get(kv, n, "exe") : "?", node && *node ? ", node " : "",
            node && *node ? node : "", zs_kv_get(kv, n, "layout_source") ? zs_kv_get(kv, n, "layout_source") : "?",
            model, zs_cmdline_zam(zs_kv_get(kv, n, "cmdline"))
                       ? ", scripts compiled with ZAM" : "");
}

/* A line of the recorder's end report (ZS_EV_REPORT: all of it, the
 * details -v prints included), kept to be shown after the summary. */
static void keep_report_line(info *in, const char *line)
{
    char *copy = in->nreport < MAX_REPORT_LINES ? strdup(line) : NULL;
    if (copy)
        in->report[in->nreport++] = copy;
    else
        in->report_left++;
}

static void print_report(info *in)
{
    if (in->nreport)
        fprintf(in->out, "  the recorder's end report:\n");
    for (size_t i = 0; i < in->nreport; i++) {
        fprintf(in->out, "    %s\n", in->report[i]);
        free(in->report[i]);
    }
    if (in->report_left)
        fprintf(in->out, "    (%zu more lines)\n", in->report_left);
    in->nreport = in->report_left = 0;
}

/* Prints the header, processes and events as they come, and counts what
 * only a description shows. */
static void see(void *ctx, const zs_record *r)
{
    info *in = ctx;
    if (!in->any || r->offset != in->last_offset)
        in->frames++;
    in->any = 1;
    in->last_offset = r->offset;
    if (r->type == ZS_REC_HEADER) {
        header(r, in->out);
    } else if (r->type == ZS_REC_PROCESS) {
        process(r, in->out);
    } else if (r->type == ZS_REC_SNAPSHOT) {
        in->snapshot_bytes += r->snapshot.len;
        in->snapshot_regions++;
    } else if (r->type == ZS_REC_MODULE) {
        in->modules++;
    } else if (r->type == ZS_REC_LOCATION) {
        in->locations++;
    } else if (r->type == ZS_REC_LINES) {
        in->located++;
    } else if (r->type == ZS_REC_EVENT && r->event.kind == ZS_EV_REPORT) {
        keep_report_line(in, r->event.message);
    } else if (r->type == ZS_REC_EVENT && r->event.kind != ZS_EV_SKIPPED &&
               r->event.kind != ZS_EV_TORN && *r->event.message &&
               in->events_shown++ < MAX_EVENTS_SHOWN) {
        fprintf(in->out, "  event at %.3f s: %s\n", (double)r->event.t_us / 1e6, r->event.message);
    }
}

static void summary(const info *in, const conv_read_totals *t, const conv_read_report *rep,
                    FILE *out)
{
    fprintf(out, "  format version %u; ", t->format_version);
    if (t->samples) {
        fprintf(out, "samples from ");
        print_wall(out, t->start_wall_ns + (int64_t)t->first_us * 1000);
        fprintf(out, " for %.2f s\n", (double)(t->last_us - t->first_us) / 1e6);
    } else {
        fprintf(out, "no samples\n");
    }
    for (size_t i = 0; i < t->nprocs; i++) {
        const conv_read_process *p = &t->procs[i];
        fprintf(out, "  pid %u: %" PRIu64 " samples", p->pid, p->samples);
        if (p->has_nettime)
            fprintf(out, ", network time %.6f .. %.6f", p->net_first, p->net_last);
        fputc('\n', out);
    }
    conv_lane_describe(out, t->lane, t->start_wall_ns, "  ");
    if (t->marked)
        fprintf(out, "  %" PRIu64 " on-CPU samples, %" PRIu64 " off-CPU samples (%.1f%% off-CPU)\n",
                t->samples - t->off_cpu, t->off_cpu,
                t->samples ? 100.0 * (double)t->off_cpu / (double)t->samples : 0.0);
    else if (t->format_version >= 7)
        fprintf(out, "  samples not marked on or off the CPU: all wall-clock\n");
    fprintf(out, "  %" PRIu64 " samples, %" PRIu64 " distinct stacks, %" PRIu64
            " skipped ticks, %" PRIu64 " torn reads; snapshot %" PRIu64 " bytes in %" PRIu64
            " regions\n",
            t->samples, t->stacks, t->skipped, t->torn, in->snapshot_bytes, in->snapshot_regions);
    if (in->modules || in->locations)
        fprintf(out, "  native frames: %" PRIu64 " modules, %" PRIu64 " distinct PCs, %" PRIu64
                " of them with source lines (DWARF)\n", in->modules, in->locations, in->located);
    if (rep->truncated)
        fprintf(out, "  zstd frames: %" PRIu64 ", the last one (offset %" PRIu64
                ") cut short; its whole records are used\n", in->frames, rep->truncated_at);
    else
        fprintf(out, "  zstd frames: %" PRIu64 ", all complete\n", in->frames);
    fprintf(out, "  %s\n", rep->has_trailer ? "trailer present: the recorder finished"
                                           : "no trailer: the recorder did not finish (killed?)");
}

static int describe(const char *path, FILE *out)
{
    struct stat st;
    zs_error err = {0};
    info in = {.out = out};
    fprintf(out, "%s", path);
    if (stat(path, &st) == 0)
        fprintf(out, " (%lld bytes)", (long long)st.st_size);
    fputc('\n', out);
    conv_read_observer observer = {see, &in};
    conv_reading *rd = conv_read_open(path, 0, &observer, &err);
    conv_read_report rep = {0};
    conv_read_totals totals;
    int rc = rd ? conv_read_scan(rd, &rep, &totals, &err) : -1;
    if (rc == 0)
        summary(&in, &totals, &rep, out);
    else
        fprintf(out, "  error: %s: %s\n", zs_code_message(err.code), err.detail);
    print_report(&in);
    conv_read_close(rd);
    return rc == 0 ? 0 : 1;
}

int conv_info(char **paths, int n, FILE *out)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += describe(paths[i], out);
    return bad;
}
